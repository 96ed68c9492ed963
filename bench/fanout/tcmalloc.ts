// workerd's own allocator, asked through gdb (bench only). workerd links TCMalloc and starts no
// background thread to hand freed pages back to the OS, so its RSS shows what it once needed, not
// what it holds. TCMalloc's counters tell the two apart, and its release call shows how much of
// the RSS is free memory the OS can have back. gdb stops the process while it runs (about a second,
// every request to it waiting meanwhile), so a reading is never taken inside a timed measure.
import { execFileSync } from 'node:child_process';

/** TCMalloc's numeric properties read here (names as TCMalloc's MallocExtension spells them). */
const PROPERTIES = {
  /** Bytes the program has allocated and not freed: what workerd holds. */
  inUse: 'generic.current_allocated_bytes',
  /** Free pages still mapped: freed by the program, kept by the allocator. */
  pageHeapFree: 'tcmalloc.pageheap_free_bytes',
} as const;

export type AllocatorStats = Record<keyof typeof PROPERTIES, number>;

function gdb(pid: number, commands: string[]): string {
  const args = ['-q', '-batch', '-nx', '-p', String(pid), '-ex', 'set confirm off', '-ex', 'set pagination off'];
  for (const c of commands) args.push('-ex', c);
  try {
    return execFileSync('gdb', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('--allocator needs gdb (Debian package gdb)');
    throw new Error(`gdb on workerd ${pid} failed: ${e.stderr?.trim() || e.message}`);
  }
}

/** One gdb attach: every property, each written into a word the command line allocates in workerd. */
export function allocatorStats(pid: number): AllocatorStats {
  const names = Object.entries(PROPERTIES);
  const commands = ['set $v = (unsigned long *) malloc(8)'];
  for (const [key, name] of names) {
    commands.push(
      `call (void) MallocExtension_Internal_GetNumericProperty("${name}", ${name.length}, $v)`,
      `printf "${key}=%lu\\n", *$v`,
    );
  }
  commands.push('call (void) free($v)');
  const out = gdb(pid, commands);
  const stats = {} as AllocatorStats;
  for (const [key] of names) {
    const m = new RegExp(`^${key}=(\\d+)$`, 'm').exec(out);
    if (m === null) throw new Error(`gdb did not print ${key} for workerd ${pid}:\n${out}`);
    stats[key as keyof AllocatorStats] = Number(m[1]);
  }
  return stats;
}

/** Asks TCMalloc to hand every free page back to the OS (what a background release would do). */
export function releaseFreeMemory(pid: number): void {
  gdb(pid, ['call (void) MallocExtension_Internal_ReleaseMemoryToSystem((unsigned long) -1)']);
}
