import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adapterFor } from '@switchyard/protocol';
import { CliProcess } from '../src/cli/cli-process.ts';
import { readProc } from '../src/host/process-tree.ts';
import { until } from '../../test/helpers/poll.ts';

describe('a CLI that exits on its own', () => {
  it('takes what is left of its process group with it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-cli-group-'));
    const pidFile = join(dir, 'tool.pid');
    // The "CLI" starts a tool in its own group, writes the tool's pid and exits without ending it:
    // a CLI that crashed mid-turn, or a leader killed while the sandbox was still being set up.
    const proc = await CliProcess.start(
      {
        command: '/bin/sh',
        args: ['-c', `sleep 300 & echo $! > ${pidFile}; exit 3`],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        cwd: dir,
        files: [],
      },
      adapterFor('claude').createCodec(),
      { onEvent: () => {} },
    );
    const exit = await proc.exited;
    expect(exit.code).toBe(3);
    const tool = Number(readFileSync(pidFile, 'utf8'));
    expect(tool).toBeGreaterThan(0);
    try {
      // The tool shared the CLI's stdout; its pipes closed (so `exited` resolved) once it was dying.
      // The kernel closes a dying process's files before it turns zombie, so /proc may still say `R`
      // for a moment; a tool left alive would sleep (`S`) until the deadline.
      await until('the tool gone', () => ['gone', 'Z'].includes(readProc(tool)?.state ?? 'gone'), 5_000);
    } finally {
      if (readProc(tool) !== undefined) process.kill(tool, 'SIGKILL');
    }
  });
});
