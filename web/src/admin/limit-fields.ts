// The numeric limits the Limits panel edits: their labels, how a typed value becomes the number
// the API takes (a size typed in KiB/MiB/GiB becomes exact bytes), and the server's refusal of
// one put in the form's words.
import type { ApiError, Schemas } from '../api/client.ts';
import { formatSize, parseSize, type SizeUnit } from '../ui/format.ts';

type Settings = Schemas['Settings'];

export type SizeKey = 'maxMessageBytes' | 'workspaceMaxFileBytes' | 'workspaceMaxBytes';
export type CountKey =
  | 'sessionIdleMinutes'
  | 'unusedRunnerIdleMinutes'
  | 'sessionMaxMinutes'
  | 'maxLiveRunnersPerUser'
  | 'maxLiveRunners'
  | 'workspaceMaxFiles';

export type LimitField =
  | { kind: 'count'; key: CountKey; label: string; unit?: string; hint: string }
  | { kind: 'size'; key: SizeKey; label: string; hint: string };

export const LIMIT_FIELDS: LimitField[] = [
  {
    kind: 'count',
    key: 'sessionIdleMinutes',
    label: 'Idle timeout',
    unit: 'minutes',
    hint: 'a runner with no activity this long is stopped',
  },
  {
    kind: 'count',
    key: 'unusedRunnerIdleMinutes',
    label: 'Unused runner timeout',
    unit: 'minutes',
    hint: 'a runner started while someone types, never sent a message, is stopped after this long',
  },
  {
    kind: 'count',
    key: 'sessionMaxMinutes',
    label: 'Maximum session length',
    unit: 'minutes',
    hint: 'a runner is stopped after this long regardless',
  },
  { kind: 'size', key: 'maxMessageBytes', label: 'Largest message', hint: 'text plus images' },
  { kind: 'count', key: 'maxLiveRunnersPerUser', label: 'Runners per user', hint: 'live runners one person may have' },
  { kind: 'count', key: 'maxLiveRunners', label: 'Runners in total', hint: 'live runners across everyone' },
  {
    kind: 'size',
    key: 'workspaceMaxFileBytes',
    label: 'Largest workspace file',
    hint: 'uploads and what the agent writes',
  },
  { kind: 'size', key: 'workspaceMaxBytes', label: 'Workspace size', hint: 'all files of one session together' },
  { kind: 'count', key: 'workspaceMaxFiles', label: 'Files per workspace', hint: 'files one session may hold' },
];

/** What a size field holds while edited: the typed amount and its unit. */
export interface SizeText {
  amount: string;
  unit: SizeUnit;
}

/**
 * The number to send for a field: a count as typed, a size (when edited) as exact bytes; or what
 * is wrong with it, starting with the field's label.
 */
export function readLimit(
  f: LimitField,
  draft: Settings,
  size: SizeText | undefined,
): { value: number } | { problem: string } {
  if (f.kind === 'size') {
    if (size === undefined) return { value: draft[f.key] };
    const parsed = parseSize(size.amount, size.unit);
    return 'bytes' in parsed ? { value: parsed.bytes } : { problem: `${f.label}: ${parsed.problem}` };
  }
  const value = draft[f.key];
  return Number.isInteger(value) && value > 0
    ? { value }
    : { problem: `${f.label}: enter a whole number${f.unit === undefined ? '' : ` of ${f.unit}`}, 1 or more` };
}

const amountOf = (f: LimitField, n: number): string =>
  f.kind === 'size' ? formatSize(n) : f.unit === undefined ? String(n) : `${n} ${f.unit}`;

/**
 * The server's refusal of a limit in the form's words: its label rather than its API name, a size
 * in units rather than bytes ("Largest message: must be at most 10 MiB"). Null for another field.
 */
export function limitError(err: ApiError): string | null {
  const f = LIMIT_FIELDS.find((x) => x.key === err.field);
  if (f === undefined) return null;
  let text = err.message.replace(`${f.key}: `, '');
  // The edge's bound refusal (edge/src/settings/schema.ts), its numbers in the field's units.
  const bound = /^must be a whole number from (\d+) to (\d+)$/.exec(text);
  if (bound !== null) text = `must be from ${amountOf(f, Number(bound[1]))} to ${amountOf(f, Number(bound[2]))}`;
  // A rule between two limits names the other by its API name and value: "sessionIdleMinutes (15)".
  for (const other of LIMIT_FIELDS) {
    text = text.replace(
      new RegExp(`\\b${other.key} \\((\\d+)\\)`),
      (_, n: string) => `the ${other.label.toLowerCase()} (${amountOf(other, Number(n))})`,
    );
  }
  return `${f.label}: ${text}`;
}
