// A helper process a bench starts (the offline model, the stamp proxy): a Node script that prints
// one JSON line `{"url": …}` once it listens.
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

/** The offline model's bin, which takes `--port 0` and prints where it listens. */
export const OFFLINE_MODEL_BIN = resolve(ROOT, 'offline-model', 'bin', 'switchyard-offline-model.js');

/** Resolves with the process and the URL it printed; rejects if it exits before printing one. */
export function spawnUrlProcess(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) res({ child, url: (JSON.parse(buf.slice(0, nl)) as { url: string }).url });
    });
    child.once('exit', (code) => rej(new Error(`${args.join(' ')} exited ${code}`)));
  });
}
