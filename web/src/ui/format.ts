// Small display helpers, pure.

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
];
const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

export function relativeTime(iso: string, now = Date.now()): string {
  const diff = new Date(iso).getTime() - now;
  for (const [unit, ms] of UNITS) {
    if (Math.abs(diff) >= ms) return rtf.format(Math.round(diff / ms), unit);
  }
  return 'just now';
}

export function absoluteTime(iso: string): string {
  return new Date(iso).toLocaleString();
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** Binary units, as the limits count them: 1 KiB is 1024 bytes. */
export const SIZE_UNITS = [
  { unit: 'bytes', bytes: 1 },
  { unit: 'KiB', bytes: 1024 },
  { unit: 'MiB', bytes: 1024 ** 2 },
  { unit: 'GiB', bytes: 1024 ** 3 },
] as const;
export type SizeUnit = (typeof SIZE_UNITS)[number]['unit'];

const unitBytes = (unit: SizeUnit): number => SIZE_UNITS.find((u) => u.unit === unit)?.bytes ?? 1;

/**
 * A byte count in the largest unit that shows it exactly (at most 3 decimals), to edit:
 * 10485760 is 10 MiB, 1536 is 1.5 KiB, 1000000 stays 1000000 bytes rather than an approximation.
 */
export function sizeToEdit(bytes: number): { amount: string; unit: SizeUnit } {
  for (const { unit, bytes: size } of [...SIZE_UNITS].reverse()) {
    const amount = bytes / size;
    if (amount >= 1 && Number.isInteger(amount * 1000)) return { amount: String(amount), unit };
  }
  return { amount: String(bytes), unit: 'bytes' };
}

/** A byte count to read, e.g. "10 MiB", "1.5 GiB", "976.6 KiB"; exact counts below 1 KiB. */
export function formatSize(bytes: number): string {
  for (const { unit, bytes: size } of [...SIZE_UNITS].reverse()) {
    if (size > 1 && bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`;
}

/**
 * An amount typed in a unit as exact bytes, or why it is not one. Only a whole number of bytes is
 * a size: 1.5 MiB is, 0.3 KiB (307.2 bytes) is not; nothing is rounded behind the person's back.
 */
export function parseSize(amount: string, unit: SizeUnit): { bytes: number } | { problem: string } {
  const text = amount.trim();
  if (text === '') return { problem: 'enter a size' };
  if (!/^\d+(\.\d+)?$/.test(text)) return { problem: `“${text}” is not a number; write it like 10 or 1.5` };
  // Multiplying by a power of two is exact in floating point, so a fraction that does not come
  // out whole really is not a whole number of bytes.
  const bytes = Number(text) * unitBytes(unit);
  if (!Number.isSafeInteger(bytes)) {
    return Number.isInteger(bytes)
      ? { problem: `${text} ${unit} is far too large` }
      : { problem: `${text} ${unit} is not a whole number of bytes; use a smaller unit` };
  }
  if (bytes === 0) return { problem: 'must be more than 0' };
  return { bytes };
}

export function formatCost(usd: number): string {
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export function formatDuration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** "retry in 3 minutes" style text for a Retry-After value. */
export function inSeconds(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}
