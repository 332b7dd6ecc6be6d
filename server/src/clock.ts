/** The current time. Injected so tests can pin or move it. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();
