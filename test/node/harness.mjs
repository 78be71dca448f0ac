// Test harness for the scripted MCP client tests in this directory.
//
// It builds the hangar binary and the test plugins once per test run, starts
// `hangar serve` over stdio or Streamable HTTP, connects MCP TypeScript SDK
// clients to it, records every JSON-RPC message each client sends and
// receives, and cleans up afterwards.
//
// One run of `node --test` starts a child process per test file. The build
// is shared by those processes: it goes to a directory named after the test
// runner's pid (the parent of every file's process). The first process to
// create the directory builds into it; the others wait for it to be ready. A
// detached janitor process removes the directory once the runner has exited,
// and any leftover from a runner that died is swept at the next start.
//
// Environment:
//   HANGAR_TEST_VERBOSE=1  copy every hangar process's stderr to this stderr.
//   HANGAR_BIN=PATH        use this hangar binary instead of building one.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** The repository root. */
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The transports every feature test runs over. */
export const TRANSPORTS = ['stdio', 'http'];

/** Source packages of the test plugins, by plugin name. */
const PLUGIN_SOURCES = {
  legacy: './internal/testplugins/legacy',
  servlet: './internal/testplugins/servlet',
  conformance: './examples/conformance',
  v1full: './internal/testplugins/v1full',
  hello: './examples/hello',
  notes: './examples/notes',
  hostile: './internal/testplugins/hostile',
  dashboard: './examples/dashboard',
};

const VERBOSE = process.env.HANGAR_TEST_VERBOSE === '1';
const DIR_PREFIX = 'hangar-node-tests-';
const BUILD_WAIT_MS = 10 * 60_000;

// ---------------------------------------------------------------------------
// Building

let built; // memoized Promise of the build description

/**
 * Builds hangar and the test plugins (once per test run) and returns
 * {dir, hangar, cache, plugins: {name: path}}.
 */
export function build() {
  built ??= buildShared();
  return built;
}

async function buildShared() {
  // Under `node --test` each file runs in a child of the runner; share the
  // build with the runner's other children. Run directly, own it.
  const owner = process.env.NODE_TEST_CONTEXT ? process.ppid : process.pid;
  const dir = path.join(os.tmpdir(), `${DIR_PREFIX}${owner}`);
  sweepStale(owner);
  let builder = true;
  try {
    fs.mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if (err.code !== 'EEXIST') throw err;
    builder = false;
  }
  const readyFile = path.join(dir, 'ready.json');
  const failedFile = path.join(dir, 'failed.txt');
  if (builder) {
    startJanitor(owner, dir);
    try {
      const info = await buildInto(dir);
      fs.writeFileSync(readyFile + '.tmp', JSON.stringify(info));
      fs.renameSync(readyFile + '.tmp', readyFile);
      return info;
    } catch (err) {
      fs.writeFileSync(failedFile, String(err?.stack ?? err));
      throw err;
    }
  }
  const deadline = Date.now() + BUILD_WAIT_MS;
  for (;;) {
    if (fs.existsSync(readyFile)) return JSON.parse(fs.readFileSync(readyFile, 'utf8'));
    if (fs.existsSync(failedFile)) {
      throw new Error(`the shared build in ${dir} failed:\n${fs.readFileSync(failedFile, 'utf8')}`);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for the shared build in ${dir}`);
    await sleep(100);
  }
}

async function buildInto(dir) {
  const bin = path.join(dir, 'bin');
  const cache = path.join(dir, 'cache');
  fs.mkdirSync(bin);
  fs.mkdirSync(cache);
  fs.mkdirSync(path.join(dir, 'configs'));
  const plugins = {};
  const jobs = [];
  let hangar = process.env.HANGAR_BIN;
  if (hangar) {
    hangar = path.resolve(hangar);
  } else {
    hangar = path.join(bin, 'hangar');
    jobs.push(run('go', ['build', '-o', hangar, './cmd/hangar'], { cwd: REPO }));
  }
  for (const [name, src] of Object.entries(PLUGIN_SOURCES)) {
    plugins[name] = path.join(bin, `${name}.wasm`);
    jobs.push(run('go', ['build', '-buildmode=c-shared', '-o', plugins[name], src], {
      cwd: REPO,
      env: { ...process.env, GOOS: 'wasip1', GOARCH: 'wasm' },
    }));
  }
  await Promise.all(jobs);
  // Compile every plugin once into the shared compilation cache, so that
  // servers start in well under a second.
  await Promise.all(Object.values(plugins).map((p) =>
    run(hangar, ['inspect', '--cache-dir', cache, p], { cwd: dir })));
  return { dir, hangar, cache, plugins };
}

/** Runs a command to completion; rejects with its output if it fails. */
export function run(cmd, args, opts) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(' ')}: exit ${code ?? signal}\n${out}`));
    });
  });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** Removes build directories of test runs whose runner is gone. */
function sweepStale(owner) {
  let names;
  try {
    names = fs.readdirSync(os.tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const m = name.startsWith(DIR_PREFIX) && /^\d+$/.exec(name.slice(DIR_PREFIX.length));
    if (!m) continue;
    const pid = Number(m[0]);
    if (pid === owner || alive(pid)) continue;
    const p = path.join(os.tmpdir(), name);
    try {
      if (fs.statSync(p).uid !== process.getuid()) continue;
      fs.rmSync(p, { recursive: true, force: true });
    } catch {
      // another process swept it first
    }
  }
}

/** Starts a detached process that removes dir once process pid is gone. */
function startJanitor(pid, dir) {
  const code = `
    const fs = require('node:fs');
    const [pid, dir] = [Number(process.argv[1]), process.argv[2]];
    const gone = () => { try { process.kill(pid, 0); return false; } catch (e) { return e.code !== 'EPERM'; } };
    const timer = setInterval(() => {
      if (!gone()) return;
      clearInterval(timer);
      fs.rmSync(dir, { recursive: true, force: true });
    }, 300);`;
  spawn(process.execPath, ['-e', code, String(pid), dir], { detached: true, stdio: 'ignore' }).unref();
}

// ---------------------------------------------------------------------------
// Configurations

/** The expected tool, resource, template and prompt names of each plugin. */
export const CATALOG = {
  legacy: { tools: ['reverse', 'add', 'fail'], resources: [], templates: [], prompts: [] },
  servlet: {
    tools: ['lookup'],
    resources: ['servlet://greeting', 'servlet://logo.bin'],
    templates: ['servlet://item/{id}'],
    prompts: [],
  },
  conformance: {
    tools: [
      'test_simple_text', 'test_image_content', 'test_audio_content', 'test_embedded_resource',
      'test_multiple_content_types', 'test_tool_with_logging', 'test_error_handling',
      'test_tool_with_progress', 'test_sampling', 'test_elicitation',
      'test_elicitation_sep1034_defaults', 'test_elicitation_sep1330_enums',
      'json_schema_2020_12_tool', 'test_reconnection',
      'test_input_required_result_elicitation', 'test_input_required_result_sampling',
      'test_input_required_result_list_roots', 'test_input_required_result_request_state',
      'test_input_required_result_multiple_inputs', 'test_input_required_result_multi_round',
      'test_input_required_result_tampered_state', 'test_input_required_result_capabilities',
      'test_missing_capability', 'test_streaming_elicitation', 'test_logging_tool',
      'test_header_params', 'test_trigger_tool_change', 'test_trigger_prompt_change',
      'test_dynamic_tool',
      // The tasks extension's scenarios (examples/conformance/tasks.go).
      'slow_compute', 'greet', 'failing_job', 'protocol_error_job', 'confirm_delete',
      'multi_input', 'test_tool_with_task',
    ],
    resources: ['test://static-text', 'test://static-binary', 'test://watched-resource'],
    templates: ['test://template/{id}/data'],
    prompts: [
      'test_simple_prompt', 'test_prompt_with_arguments',
      'test_prompt_with_embedded_resource', 'test_prompt_with_image',
      'test_input_required_result_prompt', 'test_dynamic_prompt',
    ],
  },
  v1full: {
    tools: [
      'list_roots', 'roots_changed_count', 'enable_extra_tool', 'enable_extra_resource',
      'enable_extra_prompt', 'disable_extras', 'notify_resource_updated', 'elicit_url',
      'elicit_form', 'log_levels', 'spin', 'sleep_ms', 'echo_context', 'config_greeting',
      'structured', 'panic',
    ],
    resources: [],
    templates: [],
    prompts: [],
  },
};

/**
 * The default plugin set: all four test plugins, unprefixed. v1full keeps
 * its counters and extras in instance memory, so it gets one instance.
 */
export const ALL_PLUGINS = [
  { name: 'legacy' },
  { name: 'servlet' },
  { name: 'conformance' },
  { name: 'v1full', limits: { max_instances: 1 } },
];

let configCount = 0;

/**
 * Writes a configuration file for plugins, a list of {name, prefix?,
 * config?, limits?} naming built test plugins, and returns its path.
 */
async function writeConfig(b, plugins) {
  const doc = {
    plugins: plugins.map(({ name, plugin, ...rest }) => ({
      name,
      path: b.plugins[plugin ?? name],
      ...rest,
    })),
  };
  const file = path.join(b.dir, 'configs', `${process.pid}-${++configCount}.json`);
  await fsp.writeFile(file, JSON.stringify(doc, null, 2));
  return file;
}

// ---------------------------------------------------------------------------
// Servers and sessions

const live = new Set(); // child processes to kill if this process exits

process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * Starts hangar with the given plugins, over 'stdio' or 'http', and
 * returns a Hangar. Over HTTP the process starts now and every connect()
 * opens a new session on it; over stdio every connect() starts its own
 * process (stdio carries one session).
 *
 * With a test context t, the server is closed after the test.
 */
export async function startHangar(kind, { plugins = ALL_PLUGINS, t } = {}) {
  if (!TRANSPORTS.includes(kind)) throw new Error(`unknown transport ${kind}`);
  const b = await build();
  const cfg = await writeConfig(b, plugins);
  const h = new Hangar(kind, b, cfg);
  if (t) t.after(() => h.close());
  if (kind === 'http') await h.startHTTP();
  return h;
}

export class Hangar {
  constructor(kind, b, cfg) {
    this.kind = kind;
    this.build = b;
    this.config = cfg;
    this.sessions = [];
    this.url = undefined;
    this.httpProcess = undefined;
    this.httpStderr = '';
    this.httpExit = undefined; // {code, signal} once exited
    this.closing = false;
  }

  args() {
    return ['serve', '--cache-dir', this.build.cache, '--config', this.config];
  }

  async startHTTP() {
    const child = spawn(this.build.hangar, [...this.args(), '--http', '127.0.0.1:0'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.httpProcess = child;
    live.add(child);
    const exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        live.delete(child);
        this.httpExit = { code, signal };
        resolve(this.httpExit);
      });
    });
    this.httpExited = exited;
    this.url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`hangar did not log its URL within 60s:\n${this.httpStderr}`)), 60_000);
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk) => {
        this.httpStderr += chunk;
        if (VERBOSE) process.stderr.write(prefixLines('[hangar http] ', chunk));
        const m = /url="?(http:\/\/127\.0\.0\.1:\d+\/mcp)"?/.exec(this.httpStderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on('error', (err) => { clearTimeout(timer); reject(err); });
      exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`hangar exited (${code ?? signal}) before serving:\n${this.httpStderr}`));
      });
    });
    return this.url;
  }

  /**
   * Connects a new MCP client. Options:
   *   capabilities  client capabilities (default none)
   *   setup(client) registers request/notification handlers before connecting
   *   name          client name
   */
  async connect({ capabilities = {}, setup, name = 'hangar-node-tests' } = {}) {
    const client = new Client({ name, version: '1.0.0' }, { capabilities });
    if (setup) setup(client);
    let transport;
    const session = new Session(this, client);
    if (this.kind === 'http') {
      if (this.httpExit) throw new Error(`hangar is not running (${this.httpExit.code ?? this.httpExit.signal}):\n${this.httpStderr}`);
      transport = new StreamableHTTPClientTransport(new URL(this.url));
    } else {
      transport = new StdioClientTransport({ command: this.build.hangar, args: this.args(), stderr: 'pipe' });
      transport.stderr.setEncoding('utf8');
      transport.stderr.on('data', (chunk) => {
        session.stderr += chunk;
        if (VERBOSE) process.stderr.write(prefixLines('[hangar stdio] ', chunk));
      });
    }
    session.attach(transport);
    this.sessions.push(session);
    await client.connect(transport);
    return session;
  }

  /** Server-side diagnostics (stderr of the HTTP process or of every stdio process). */
  stderr() {
    if (this.kind === 'http') return this.httpStderr;
    return this.sessions.map((s) => s.stderr).join('\n---\n');
  }

  /**
   * Closes every session and stops the server. Throws if a server process
   * went away before being told to, or (HTTP) did not stop within 8s of
   * SIGTERM.
   */
  async close() {
    if (this.closing) return;
    this.closing = true;
    const problems = [];
    for (const s of this.sessions) {
      if (s.unexpectedClose) problems.push(`a ${this.kind} session closed unexpectedly; stderr:\n${s.stderr || this.httpStderr}`);
      await s.close();
    }
    const child = this.httpProcess;
    if (child) {
      if (this.httpExit) {
        problems.push(`hangar exited unexpectedly (${this.httpExit.code ?? this.httpExit.signal}):\n${this.httpStderr}`);
      } else {
        child.kill('SIGTERM');
        const res = await Promise.race([this.httpExited, sleep(8_000, null, { ref: false })]);
        if (res === null) {
          child.kill('SIGKILL');
          await this.httpExited;
          problems.push(`hangar did not stop within 8s of SIGTERM:\n${this.httpStderr}`);
        } else if (res.code !== 0) {
          problems.push(`hangar exited with ${res.code ?? res.signal} after SIGTERM:\n${this.httpStderr}`);
        }
      }
    }
    if (problems.length) throw new Error(problems.join('\n\n'));
  }
}

/** One MCP client session, with a record of its traffic. */
export class Session {
  constructor(hangar, client) {
    this.hangar = hangar;
    this.client = client;
    this.transport = undefined;
    this.received = []; // JSON-RPC messages from the server, in order
    this.sent = []; // JSON-RPC messages to the server, in order
    this.stderr = ''; // stdio: this session's server stderr
    this.closed = false;
    this.unexpectedClose = false;
    this.waiters = new Set();
  }

  /** Records the traffic of transport, whatever handler the SDK installs. */
  attach(transport) {
    this.transport = transport;
    let handler;
    Object.defineProperty(transport, 'onmessage', {
      configurable: true,
      get: () => handler && ((msg, extra) => {
        this.received.push(msg);
        for (const w of this.waiters) w();
        handler(msg, extra);
      }),
      set: (h) => { handler = h; },
    });
    const send = transport.send.bind(transport);
    transport.send = (msg, opts) => {
      this.sent.push(msg);
      return send(msg, opts);
    };
    this.client.onclose = () => {
      if (!this.closed) this.unexpectedClose = true;
    };
  }

  /** Notifications received so far with the given method. */
  notifications(method) {
    return this.received.filter((m) => m.method === method && m.id === undefined);
  }

  /**
   * Waits until pred(received) is true, checking on every message and every
   * 20ms, and returns its value; throws after timeoutMs.
   */
  async waitFor(what, pred, timeoutMs = 5_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = pred(this.received);
      if (v) return v;
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}; received:\n${this.dump()}`);
      }
      await new Promise((resolve) => {
        const w = () => { this.waiters.delete(w); clearTimeout(timer); resolve(); };
        const timer = setTimeout(w, 20);
        this.waiters.add(w);
      });
    }
  }

  /** Waits for n notifications of method and returns them. */
  waitForNotifications(method, n, timeoutMs = 5_000) {
    return this.waitFor(`${n} ${method}`, () => {
      const got = this.notifications(method);
      return got.length >= n && got;
    }, timeoutMs);
  }

  /** The received traffic, for failure messages. */
  dump() {
    return this.received.map((m) => JSON.stringify(m).slice(0, 300)).join('\n');
  }

  /** Calls a tool, with optional request options (signal, onprogress, timeout). */
  callTool(name, args = {}, options = {}) {
    return this.client.callTool({ name, arguments: args }, undefined, { timeout: 30_000, ...options });
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    if (this.hangar.kind === 'http' && this.transport.sessionId && !this.unexpectedClose) {
      try {
        await this.transport.terminateSession();
      } catch {
        // the server may be going away; the session ends with it
      }
    }
    await this.client.close();
  }
}

// ---------------------------------------------------------------------------
// Helpers for assertions

/** Every item of a paginated list method (tools, resources, resourceTemplates, prompts). */
export async function listAll(session, kind) {
  const method = {
    tools: 'listTools',
    resources: 'listResources',
    resourceTemplates: 'listResourceTemplates',
    prompts: 'listPrompts',
  }[kind];
  const items = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const res = await session.client[method](cursor === undefined ? {} : { cursor });
    items.push(...res[kind]);
    cursor = res.nextCursor;
    if (cursor === undefined) return items;
  }
  throw new Error(`${kind}: more than 100 pages`);
}

/** The sorted names of the listed tools or prompts. */
export async function names(session, kind) {
  return (await listAll(session, kind)).map((x) => x.name).sort();
}

/** A CallToolResult holding exactly one text content. */
export function textResult(text, isError = false) {
  const res = { content: [{ type: 'text', text }] };
  if (isError) res.isError = true;
  return res;
}

/** res without fields that are absent or false by default (isError: false). */
export function normalizeResult(res) {
  const out = { ...res };
  if (out.isError === false) delete out.isError;
  return out;
}

/** Measures how long fn takes; returns {value, ms}. */
export async function timed(fn) {
  const start = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - start };
}

function prefixLines(prefix, chunk) {
  return chunk.replace(/^(?=.)/gm, prefix);
}
