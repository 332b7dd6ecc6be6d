import { scheduleEventCalendarUrl } from '@concierge/contract/chat-constants';
import { formatPeopleTime } from '@concierge/contract/people-time';
import type { Source } from '@concierge/contract';
import { useState } from 'react';
import { runtimeConfig } from '../app/runtime-config.ts';
import { CalendarIcon, FileIcon } from './icons.tsx';

/** A phone shows this many at first: a long list would push the answer's end off the screen. */
const FIRST_SHOWN = 3;

const sourceKey = (source: Source) => `${source.kind}:${source.event_uid ?? source.file_id ?? source.title}`;

/**
 * What an answer cites (DESIGN §9 "Sources"): events as title · day time ·
 * room with "Add to calendar"; files by their title, never a generated file
 * name. Times in the convention's zone, 24-hour.
 */
export function Sources({ sources }: { sources: Source[] }) {
  const [all, setAll] = useState(false);
  if (sources.length === 0) return null;
  const shown = all ? sources : sources.slice(0, FIRST_SHOWN);
  return (
    <div className="cc-sources">
      <p className="cc-sources__heading">Sources</p>
      <ul>
        {shown.map((source) => {
          const details = [source.starts_at && formatPeopleTime(source.starts_at, runtimeConfig.timeZone), source.location].filter(Boolean);
          return source.kind === 'event' ? (
            <li key={sourceKey(source)} className="cc-source" title={`Source: ${source.title}`}>
              <span className="cc-source__text">
                <span className="cc-source__title">{source.title}</span>
                {details.length > 0 && (
                  <>
                    {/* Read as one line, "title · day time · room"; shown with the details under the title. */}
                    <span className="cc-sr-only"> · </span>
                    <span className="cc-source__details">{details.join(' · ')}</span>
                  </>
                )}
              </span>
              {source.event_uid && (
                <a className="cc-link-button" href={scheduleEventCalendarUrl(source.event_uid)} download aria-label={`Add to calendar: ${source.title}`}>
                  <CalendarIcon size={16} />
                  Add to calendar
                </a>
              )}
            </li>
          ) : (
            <li key={sourceKey(source)} className="cc-source" title={`Source: ${source.title}`}>
              <span className="cc-source__file">
                <FileIcon size={16} />
                <span className="cc-source__title">{source.title}</span>
              </span>
            </li>
          );
        })}
      </ul>
      {shown.length < sources.length && (
        <button type="button" className="cc-button cc-button--text cc-more" onClick={() => setAll(true)}>
          Show all {sources.length} sources
        </button>
      )}
    </div>
  );
}
