import { Turnstile } from '@marsidev/react-turnstile';

/** The security verification widget (SPEC §2: dark theme, no automatic retry), loaded only when verification is on. */
export default function Verification({
  siteKey,
  onVerified,
  onExpired,
  onError,
}: {
  siteKey: string;
  onVerified: (token: string) => void;
  onExpired: () => void;
  onError: () => void;
}) {
  return <Turnstile siteKey={siteKey} options={{ theme: 'dark', retry: 'never', size: 'flexible' }} onSuccess={onVerified} onExpire={onExpired} onError={onError} />;
}
