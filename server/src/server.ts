import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { loadEnv } from './config/env.ts';
import { createDeps, type Deps, type DepsOptions } from './deps.ts';

export interface RunningServer {
  url: string;
  app: FastifyInstance;
  deps: Deps;
  /** Stops accepting connections, lets in-flight requests finish, then closes the database. */
  close(): Promise<void>;
}

/**
 * Starts the whole product on a port: env → deps → app → listen. `main.ts`
 * runs it with process.env; browser tests run it with their own values.
 */
export async function startServer(
  envSource: Record<string, string | undefined>,
  options: DepsOptions & { runCrawler?: boolean } = {},
): Promise<RunningServer> {
  const env = loadEnv(envSource);
  const deps = await createDeps(env, options);
  let app: FastifyInstance;
  try {
    app = await buildApp(deps);
    await app.listen({ port: env.PORT, host: env.HOST });
    deps.leases.start();
    deps.askWorker.start();
    deps.discord.start();
    // A new provider or vector store gets the known documents again; the crawler's first upload waits for it.
    void deps.knowledge.sync();
    if (options.runCrawler ?? true) deps.crawlerScheduler.start();
    deps.housekeeping.start();
  } catch (error) {
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
    app,
    deps,
    close() {
      closing ??= (async () => {
        await app.close();
        await deps.close();
      })();
      return closing;
    },
  };
}
