import { describe, expect, it } from 'vitest';
import { ProviderError } from '../assistant/provider.ts';
import { DATABASE_UNAVAILABLE } from '../errors.ts';
import { ASK_ERRORS, describeFailure } from './ask-pipeline.ts';

const running = new AbortController().signal;
/** An error as pg (or the query thread, passing its code on) reports it. */
const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('what an attendee is told when an answer fails', () => {
  it('is the database’s 503 when the database went away while answering', () => {
    for (const error of [
      withCode('terminating connection due to administrator command', '57P01'),
      withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
      new Error('Connection terminated unexpectedly'),
      new Error('could not store the answer', { cause: withCode('the database system is starting up', '57P03') }),
    ]) {
      expect(describeFailure(error, running, 60_000)).toEqual({ status: 503, code: 'database_unavailable', userMessage: DATABASE_UNAVAILABLE, logMessage: error.message });
    }
  });

  it('stays the provider’s when the provider failed, whatever network code its cause carries', () => {
    const refused = new ProviderError('OpenAI connection error: Connection error.', { cause: new Error('fetch failed', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') }) });
    expect(describeFailure(refused, running, 60_000)).toMatchObject({ status: 502, code: 'provider_error', userMessage: ASK_ERRORS.providerError });
    expect(describeFailure(new Error('The assistant’s run ended with status failed'), running, 60_000)).toMatchObject({ status: 502, code: 'provider_error' });
  });

  it('is the time-out once the answer’s ceiling has passed, whatever failed', () => {
    const ceiling = new AbortController();
    ceiling.abort();
    expect(describeFailure(withCode('connect ECONNREFUSED', 'ECONNREFUSED'), ceiling.signal, 90_000)).toEqual({
      status: 504,
      code: 'answer_timeout',
      userMessage: ASK_ERRORS.timeout,
      logMessage: 'No answer within 90 s',
    });
  });
});
