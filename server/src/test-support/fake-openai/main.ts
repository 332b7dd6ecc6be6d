/**
 * `npm run fake-openai`: the fake OpenAI server on its own, for trying the
 * product's OpenAI provider without an account or network. Tune it while it
 * runs: curl -X POST localhost:8090/__control -d '{"finalStatus":"failed"}'.
 */
import { startFakeOpenAI } from './fake-openai.ts';

const port = Number(process.env.FAKE_OPENAI_PORT ?? 8090);
const fake = await startFakeOpenAI({ port, apiKey: process.env.FAKE_OPENAI_KEY ?? 'sk-fake' });
console.log(`Fake OpenAI listening on ${fake.url}`);
console.log(`Run the product against it:  OPENAI_BASE_URL=${fake.url} OPENAI_API_KEY=${fake.apiKey} npm start`);
console.log(`Knobs: POST http://127.0.0.1:${port}/__control with {"latencyMs","runDurationMs","deltaDelayMs","finalStatus","dropStream":{"afterEvents","times"},"failures":[{"path","status","count","stream"}]}`);

const stop = () => void fake.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
