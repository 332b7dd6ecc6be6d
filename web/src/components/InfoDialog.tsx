import { formatPeopleTime } from '@concierge/contract/people-time';
import { useEffect, useState } from 'react';
import { api } from '../api/client.ts';
import { runtimeConfig } from '../app/runtime-config.ts';
import { Dialog } from '../chat/Dialog.tsx';
import { LazyMarkdown } from '../chat/LazyMarkdown.tsx';

interface LastRefresh {
  success: boolean;
  data?: string;
}

/** SPEC §1: shown only when last_refresh is present and not empty, '0' or 'null'. */
const usableRefresh = (value: string | undefined | null): value is string => Boolean(value) && value !== '0' && value !== 'null';

async function fetchLastRefresh(): Promise<string | null> {
  try {
    const reply = await api.get<LastRefresh>('/public/chat/last_refresh', { timeoutMs: 10_000 });
    return reply.success ? (reply.data ?? null) : null;
  } catch {
    return null; // SPEC §8: a failure is silent.
  }
}

/**
 * The info dialog (SPEC §1): what this app is (and is not), the community
 * and convention links, and when the schedule was last refreshed, in the
 * convention's zone on a 24-hour clock (DESIGN §9). Used by the chat and the console.
 */
export default function InfoDialog({ onClose }: { onClose: () => void }) {
  const [lastRefresh, setLastRefresh] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    void fetchLastRefresh().then((value) => current && setLastRefresh(value));
    return () => {
      current = false;
    };
  }, []);
  const { productName, communityUrl, conventionUrl, chat, timeZone } = runtimeConfig;
  return (
    <Dialog
      title={`About ${productName}`}
      onClose={onClose}
      actions={
        <button type="button" className="cc-button" onClick={onClose}>
          Got it
        </button>
      }
    >
      <div data-testid="about-text">
        <LazyMarkdown text={chat.aboutText} />
      </div>
      {(communityUrl || conventionUrl) && (
        <ul className="cc-links">
          {communityUrl && (
            <li>
              <a href={communityUrl} target="_blank" rel="noopener noreferrer">
                Join the community chat
              </a>
            </li>
          )}
          {conventionUrl && (
            <li>
              <a href={conventionUrl} target="_blank" rel="noopener noreferrer">
                Official convention site
              </a>
            </li>
          )}
        </ul>
      )}
      {usableRefresh(lastRefresh) && (
        <div className="cc-refresh">
          <h3>Schedule Updates</h3>
          <p>
            Last refreshed <time dateTime={lastRefresh}>{formatPeopleTime(lastRefresh, timeZone)}</time>
          </p>
        </div>
      )}
    </Dialog>
  );
}
