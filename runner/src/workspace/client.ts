import { z } from 'zod';
import {
  decodeFrames,
  encodeFrames,
  RUNNER_WORKSPACE_PATH,
  WorkspaceCommitResultSchema,
  WorkspaceManifestSchema,
  type WorkspaceCommit,
  type WorkspaceCommitResult,
  type WorkspaceManifest,
} from '@switchyard/protocol';
import { type HttpAnswer, httpRequest } from '../http-request.ts';

// The runner's HTTP client for the durable workspace (edge: RUNNER_WORKSPACE_PATH). Every answer
// is validated; failures are thrown as WorkspaceHttpError with the status the edge gave.

export class WorkspaceHttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The edge's HTTP base for the workspace, from the hub URL the runner dials (ws → http). */
export function workspaceBaseUrl(hubUrl: string): string {
  const u = new URL(hubUrl);
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  u.pathname = RUNNER_WORKSPACE_PATH;
  u.search = '';
  u.hash = '';
  return u.toString();
}

export class WorkspaceClient {
  readonly #base: string;
  readonly #token: () => string;

  constructor(base: string, token: () => string) {
    this.#base = base;
    this.#token = token;
  }

  async #call(method: string, path: string, body?: Uint8Array | string, contentType?: string): Promise<HttpAnswer> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#token()}` };
    if (contentType !== undefined) headers['content-type'] = contentType;
    const res = await httpRequest(method, `${this.#base}${path}`, headers, body);
    if (res.status < 200 || res.status > 299) {
      const text = res.body.toString('utf8');
      let message = text.slice(0, 300);
      try {
        message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
      } catch {
        // not JSON: the raw head is the message
      }
      throw new WorkspaceHttpError(res.status, `${method} ${path}: HTTP ${res.status} ${message}`);
    }
    return res;
  }

  async manifest(): Promise<WorkspaceManifest> {
    return WorkspaceManifestSchema.parse(json(await this.#call('GET', '/manifest')));
  }

  async getBlob(sha256: string): Promise<Uint8Array> {
    return (await this.#call('GET', `/blobs/${sha256}`)).body;
  }

  async putBlob(sha256: string, data: Uint8Array): Promise<void> {
    await this.#call('PUT', `/blobs/${sha256}`, data, 'application/octet-stream');
  }

  /** Stores several blobs in one request; answers their sha256 names in order. */
  async putBlobs(parts: Uint8Array[]): Promise<string[]> {
    const res = await this.#call('POST', '/blobs', encodeFrames(parts), 'application/octet-stream');
    return z.object({ sha256: z.array(z.string()) }).parse(json(res)).sha256;
  }

  /** Several blobs in one request, in the order asked. */
  async getBlobs(sha256: string[]): Promise<Uint8Array[]> {
    const res = await this.#call('POST', '/blobs/get', JSON.stringify({ sha256 }), 'application/json');
    const parts = decodeFrames(res.body);
    if (parts === null || parts.length !== sha256.length)
      throw new WorkspaceHttpError(502, 'a blob batch came back malformed');
    return parts;
  }

  async commit(commit: WorkspaceCommit): Promise<WorkspaceCommitResult> {
    const res = await this.#call('POST', '/commit', JSON.stringify(commit), 'application/json');
    return WorkspaceCommitResultSchema.parse(json(res));
  }
}

const json = (res: HttpAnswer): unknown => JSON.parse(res.body.toString('utf8'));
