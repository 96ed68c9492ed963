/** Milliseconds since the epoch. Injected so tests control expiry and lockouts without sleeping. */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();

export const iso = (ms: number): string => new Date(ms).toISOString();
