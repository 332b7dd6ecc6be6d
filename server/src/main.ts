import { EnvError } from './config/env.ts';
import { startServer } from './server.ts';

/**
 * Longest wait for in-flight requests on shutdown before the process exits
 * anyway: an answer may take up to its 110 s ceiling (DESIGN §7), plus a few
 * seconds to store it. A supervisor's stop timeout must be longer
 * (deploy/concierge.service: TimeoutStopSec=150).
 */
const SHUTDOWN_GRACE_MS = 120_000;

async function main(): Promise<void> {
  const server = await startServer(process.env);
  const log = server.deps.loggers.get('app');
  log.info({ url: `${server.url}/ui/`, health: server.healthUrl && `${server.healthUrl}/healthz` }, `${server.deps.env.PRODUCT_NAME} is ready`);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: no new connections, finishing requests in flight');
    const force = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    server.close().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  server.deps.requestShutdown = () => shutdown('console');
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof EnvError) {
    console.error(error.message);
  } else {
    console.error('Start-up failed:', error);
  }
  process.exit(1);
});
