import { RUNNER_CONNECT_PATH } from '@switchyard/protocol';

function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(h) || h === '[::1]';
}

/**
 * Where launched runners dial: RUNNER_HUB_URL, else this request's origin as ws(s). Always wss:
 * unless the host is loopback: the link carries the runner credential, every user message and
 * the transcript (the runner refuses ws:// to anywhere else too).
 */
export function runnerHubUrl(env: Env, requestUrl: string): string {
  const configured = env.RUNNER_HUB_URL?.trim();
  const url = new URL(configured ? configured : requestUrl);
  if (!configured) {
    url.pathname = RUNNER_CONNECT_PATH;
    url.search = '';
    url.hash = '';
  }
  const secure = url.protocol === 'https:' || url.protocol === 'wss:' || !isLoopbackHost(url.hostname);
  url.protocol = secure ? 'wss:' : 'ws:';
  return url.toString();
}
