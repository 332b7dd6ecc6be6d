/**
 * Waits until `condition` holds, looking every 10 ms; throws once `timeoutMs`
 * have passed without it. Resolves with the milliseconds it took.
 */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}
