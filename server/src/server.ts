import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { loadEnv } from './config/env.ts';
import { createDeps, type Deps, type DepsOptions } from './deps.ts';
import { HealthPort } from './health/health-port.ts';
import { gateNewConnections } from './http/connection-gate.ts';

export interface RunningServer {
  url: string;
  /** `http://host:port` of the health port, when HEALTH_PORT is set. */
  healthUrl: string | undefined;
  app: FastifyInstance;
  deps: Deps;
  /** Stops accepting connections, lets in-flight requests finish, then closes the database. */
  close(): Promise<void>;
}

/** The listen backlog asked for; the kernel caps it at net.core.somaxconn (README "Sizing"). */
export const LISTEN_BACKLOG = 65_535;

/**
 * Starts the whole product on a port: env → deps → app → listen. `main.ts`
 * runs it with process.env; browser tests run it with their own values.
 */
export async function startServer(
  envSource: Record<string, string | undefined>,
  options: DepsOptions & { runCrawler?: boolean; healthStallLimitMs?: number } = {},
): Promise<RunningServer> {
  const env = loadEnv(envSource);
  const deps = await createDeps(env, options);
  let app: FastifyInstance;
  let healthPort: HealthPort | undefined;
  try {
    // Hear the other processes (PostgreSQL) before serving, and read what they may have changed meanwhile.
    await deps.events.start();
    await deps.config.reload();
    app = await buildApp(deps);
    // A burst of thousands of new connections is read 16 at a time, so that one turn of the event loop cannot hold
    // up a kept-alive request (a health check) for a second (plain HTTP only: http/connection-gate.ts).
    if (!env.TLS_CERT_FILE) gateNewConnections(app.server);
    // A burst of thousands of connections waits in the kernel's accept queue instead of being reset (Node's default is 511).
    await app.listen({ port: env.PORT, host: env.HOST, backlog: LISTEN_BACKLOG });
    if (env.HEALTH_PORT !== undefined) {
      healthPort = await HealthPort.start({
        host: env.HOST,
        port: env.HEALTH_PORT,
        logger: deps.loggers.get('api'),
        stallLimitMs: options.healthStallLimitMs,
        probe: { ...deps.health, ping: () => deps.database.ping(), paused: () => deps.config.get().paused },
      });
    }
    // Every process renews the leases of the answers it is producing and takes over those of a stopped process.
    deps.leases.start();
    // Only the leader runs these (README "Several processes"); on SQLite this process is the leader.
    const { leadership } = deps;
    leadership.add('ask worker', { start: () => deps.askWorker.start(), stop: () => deps.askWorker.halt() });
    // The gateway (answers are delivered from any process: they need no gateway).
    leadership.add('discord gateway', deps.discord);
    // A new provider or vector store gets the known documents again; the crawler's first upload waits for it.
    leadership.add('knowledge sync', { start: () => void deps.knowledge.sync(), stop: () => deps.knowledge.settled() });
    if (options.runCrawler ?? true) leadership.add('crawler schedule', { start: () => deps.crawlerScheduler.start(), stop: () => deps.crawlerScheduler.stop() });
    leadership.add('housekeeping', { start: () => deps.housekeeping.start(), stop: () => deps.housekeeping.stop() });
    await leadership.start();
  } catch (error) {
    await healthPort?.stop();
    await deps.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : env.PORT;
  const protocol = env.TLS_CERT_FILE ? 'https' : 'http';
  const host = env.HOST.includes(':') ? `[${env.HOST}]` : env.HOST;
  let closing: Promise<void> | undefined;
  return {
    url: `${protocol}://${host}:${port}`,
    healthUrl: healthPort && `http://${host}:${healthPort.port}`,
    app,
    deps,
    close() {
      closing ??= (async () => {
        // The load balancer hears of the shutdown first, and stops sending new visitors while the answers finish.
        healthPort?.draining();
        await app.close();
        await deps.close();
        await healthPort?.stop();
      })();
      return closing;
    },
  };
}
