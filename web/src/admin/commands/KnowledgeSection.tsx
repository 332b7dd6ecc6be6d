import type { KnowledgeDocument, KnowledgeReply } from '@concierge/contract';
import DeleteOutlined from '@mui/icons-material/DeleteOutlined';
import DownloadOutlined from '@mui/icons-material/DownloadOutlined';
import { Alert, Box, Button, Card, CardContent, Chip, Skeleton, Stack, Tooltip, Typography } from '@mui/material';
import { useQuery } from '@tanstack/react-query';
import { api, describeHttpError } from '../../api/client.ts';
import { DateTime } from '../../components/DateTime.tsx';

export const KNOWLEDGE_QUERY_KEY = ['knowledge'];

const STATUS: Record<KnowledgeDocument['provider_status'], { label: string; color: 'success' | 'warning' | 'error' }> = {
  ready: { label: 'Ready', color: 'success' },
  pending: { label: 'Uploading', color: 'warning' },
  failed: { label: 'Failed', color: 'error' },
};
const PROVIDER: Record<string, string> = { local: 'offline assistant', openai: 'OpenAI' };

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * The control panel's Knowledge section: the documents the assistant knows
 * (the crawler's schedule and uploads) with size, time and where they are
 * in the provider's store; download and delete.
 */
export function KnowledgeSection({ busy, onDelete }: { busy: boolean; onDelete: (document: KnowledgeDocument) => void }) {
  const query = useQuery({ queryKey: KNOWLEDGE_QUERY_KEY, queryFn: () => api.get<KnowledgeReply>('/api/knowledge') });
  return (
    <Card>
      <CardContent>
        <Stack direction="row" sx={{ alignItems: 'baseline', justifyContent: 'space-between', flexWrap: 'wrap', gap: 1, mb: 1 }}>
          <Typography variant="h2" component="h2">
            Knowledge
          </Typography>
          {query.data && (
            <Typography variant="body2" color="text.secondary">
              Answered by the {PROVIDER[query.data.provider] ?? query.data.provider}
            </Typography>
          )}
        </Stack>
        {query.isPending ? (
          <Skeleton variant="rounded" height={96} />
        ) : query.isError ? (
          <Alert severity="error">{describeHttpError(query.error)}</Alert>
        ) : query.data.documents.length === 0 ? (
          <Typography color="text.secondary">The assistant knows no documents yet: refresh the schedule or upload a file.</Typography>
        ) : (
          <Box component="ul" aria-label="Knowledge documents" sx={{ listStyle: 'none', p: 0, m: 0 }}>
            {query.data.documents.map((document) => (
              <Box
                component="li"
                key={document.id}
                data-testid="knowledge-document"
                sx={{
                  display: 'grid',
                  gridTemplateColumns: { xs: '1fr', sm: 'minmax(0, 1fr) auto' },
                  gap: 1,
                  alignItems: 'center',
                  py: 1.25,
                  borderTop: 1,
                  borderColor: 'divider',
                }}
              >
                <Box sx={{ minWidth: 0 }}>
                  <Stack direction="row" sx={{ alignItems: 'center', gap: 1, flexWrap: 'wrap' }}>
                    <Typography sx={{ fontWeight: 600 }}>{document.title}</Typography>
                    <Tooltip title={document.provider_error ?? `${PROVIDER[document.provider ?? ''] ?? document.provider ?? ''} file ${document.provider_file_id ?? ''}`.trim()}>
                      <Chip size="small" variant="outlined" color={STATUS[document.provider_status].color} label={STATUS[document.provider_status].label} />
                    </Tooltip>
                  </Stack>
                  <Typography variant="body2" color="text.secondary" sx={{ overflowWrap: 'anywhere' }}>
                    {document.filename} · {size(document.bytes)} · {<DateTime value={document.updated_at} />}
                  </Typography>
                  {document.provider_error && (
                    <Typography variant="body2" color="error.main">
                      {document.provider_error}
                    </Typography>
                  )}
                </Box>
                <Stack direction="row" sx={{ gap: 1 }}>
                  <Button size="small" variant="outlined" startIcon={<DownloadOutlined />} href={`/api/knowledge/${document.id}/download`} download={document.filename}>
                    Download
                  </Button>
                  <Button size="small" variant="outlined" color="error" startIcon={<DeleteOutlined />} disabled={busy} onClick={() => onDelete(document)}>
                    Delete
                  </Button>
                </Stack>
              </Box>
            ))}
          </Box>
        )}
      </CardContent>
    </Card>
  );
}
