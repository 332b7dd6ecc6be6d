import ConstructionOutlined from '@mui/icons-material/ConstructionOutlined';
import { Card, CardContent, Stack, Typography } from '@mui/material';
import { Page } from '../../app/Layout.tsx';

/** A console screen that is not built yet. */
export default function ComingSoonPage({ title }: { title: string }) {
  return (
    <Page>
      <Typography variant="h1" component="h1" gutterBottom>
        {title}
      </Typography>
      <Card>
        <CardContent>
          <Stack direction="row" spacing={2} sx={{ alignItems: 'center' }}>
            <ConstructionOutlined color="action" />
            <Typography color="text.secondary">This screen is not available yet.</Typography>
          </Stack>
        </CardContent>
      </Card>
    </Page>
  );
}
