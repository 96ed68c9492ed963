// Structured logs: one JSON object per line on stderr, so a host (ECS, the
// local launcher, tests) can parse them. Secrets registered with `redact`
// are scrubbed from every line as a last line of defence; the code never
// passes them to the logger in the first place.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  log(level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Never print this string. */
  redact(secret: string): void;
}

export function createLogger(opts: {
  level: LogLevel;
  write?: (line: string) => void;
  base?: Record<string, unknown>;
}): Logger {
  const secrets: string[] = [];
  const write = opts.write ?? ((line: string) => process.stderr.write(line));
  const log = (level: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (RANK[level] < RANK[opts.level]) return;
    let line = JSON.stringify({ t: new Date().toISOString(), level, msg, ...opts.base, ...fields });
    for (const s of secrets) line = line.replaceAll(s, '[redacted]');
    write(`${line}\n`);
  };
  return {
    log,
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    redact: (secret) => {
      // Short strings would scrub innocent text; tokens are long.
      if (secret.length >= 8) secrets.push(secret);
    },
  };
}
