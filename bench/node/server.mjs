// The benchmark's Node peer: an MCP server built the way Node-based Wasm MCP
// hosts are built today, from the MCP TypeScript SDK (@modelcontextprotocol/sdk)
// and the Extism JS SDK (@extism/extism), hosting the same Hangar plugins
// (.wasm files) that Hangar serves.
//
// Usage (run by `go run ./bench`; Node 22 from the `node` npm package):
//
//	node server.mjs [--http HOST:PORT] [PREFIX=]PLUGIN.wasm ...
//
// Without --http it serves one session on stdin/stdout. With --http it serves
// Streamable HTTP at http://HOST:PORT/mcp, one SDK Server and transport per
// session (the SDK's stateful pattern), and logs the URL on stderr.
//
// Each plugin is loaded once, as one Extism plugin instance on Node's main
// thread (the Extism JS SDK's default), shared by every session: the way
// typical Node hosts do it. Calls to a plugin therefore run one at a time.
// The plugin's interface is detected from its exports like Hangar does
// (v1: list_tools/call_tool; legacy: describe/call), and tools/call sends
// the plugin exactly the input Hangar would send. With PREFIX=, the
// plugin's tools are offered as PREFIX_name.
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import createPlugin from '@extism/extism';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  isInitializeRequest,
} from '@modelcontextprotocol/sdk/types.js';

const log = (...args) => console.error('node-peer:', ...args);

// Hangar's host imports (namespace extism:host/user). This peer has no way
// to reach the client from inside a synchronous plugin call, so requests
// answer {"error": ...} as Hangar does for a client that lacks a
// capability, and notifications are dropped. The echo tools use none.
function hostFunctions() {
  const fail = (cx) => cx.store(JSON.stringify({ error: 'not supported by this host' }));
  const drop = () => {};
  return {
    'extism:host/user': {
      create_message: fail,
      create_elicitation: fail,
      list_roots: fail,
      notify_logging_message: drop,
      notify_progress: drop,
      notify_tool_list_changed: drop,
      notify_resource_list_changed: drop,
      notify_prompt_list_changed: drop,
      notify_resource_updated: drop,
      notify_url_elicitation_completed: drop,
    },
  };
}

class HostedPlugin {
  constructor(path, prefix, plugin, iface) {
    this.path = path;
    this.prefix = prefix;
    this.plugin = plugin;
    this.iface = iface;
    this.tools = [];
    this.busy = Promise.resolve(); // calls run one at a time on the one instance
  }

  static async load(path, prefix) {
    const wasm = await readFile(path);
    const plugin = await createPlugin(
      { wasm: [{ data: new Uint8Array(wasm) }] },
      { useWasi: true, functions: hostFunctions(), logger: console },
    );
    let iface;
    if (await plugin.functionExists('call_tool')) iface = 'v1';
    else if ((await plugin.functionExists('call')) && (await plugin.functionExists('describe'))) iface = 'legacy';
    else throw new Error(`${path}: not a Hangar plugin`);
    const hp = new HostedPlugin(path, prefix, plugin, iface);
    hp.tools = await hp.listTools();
    return hp;
  }

  // call runs one export after the previous call on this instance finished,
  // then frees the Extism memory blocks the call used (the JS SDK keeps them
  // until reset).
  call(fn, input) {
    const run = this.busy.then(async () => {
      try {
        const out = await this.plugin.call(fn, input);
        return out === null ? '' : out.text();
      } finally {
        await this.plugin.reset();
      }
    });
    this.busy = run.catch(() => {});
    return run;
  }

  async listTools() {
    let tools;
    if (this.iface === 'v1') {
      const out = await this.call('list_tools', JSON.stringify({ context: { id: '', _meta: {} } }));
      tools = JSON.parse(out).tools;
    } else {
      const out = JSON.parse(await this.call('describe', ''));
      tools = Array.isArray(out) ? out : out.tools ?? [out];
    }
    return tools;
  }

  exposed(name) {
    return this.prefix ? `${this.prefix}_${name}` : name;
  }

  async callTool(name, args, id, meta) {
    const params = { name, arguments: args ?? {} };
    const input = this.iface === 'v1'
      ? { request: params, context: { id: String(id ?? ''), _meta: meta ?? {} } }
      : { method: 'tools/call', params };
    try {
      const res = JSON.parse(await this.call(this.iface === 'v1' ? 'call_tool' : 'call', JSON.stringify(input)));
      if (!res.content) res.content = [];
      return res;
    } catch (err) {
      return { isError: true, content: [{ type: 'text', text: String(err?.message ?? err) }] };
    }
  }
}

function parseArgs(argv) {
  const opts = { http: '', plugins: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--http') opts.http = argv[++i];
    else if (a.startsWith('--http=')) opts.http = a.slice('--http='.length);
    else {
      const eq = a.indexOf('=');
      opts.plugins.push(eq > 0 ? { prefix: a.slice(0, eq), path: a.slice(eq + 1) } : { prefix: '', path: a });
    }
  }
  if (opts.plugins.length === 0) {
    console.error('usage: node server.mjs [--http HOST:PORT] [PREFIX=]PLUGIN.wasm ...');
    process.exit(2);
  }
  return opts;
}

// newServer builds one SDK server over the loaded plugins.
function newServer(plugins) {
  const routes = new Map();
  const tools = [];
  for (const p of plugins) {
    for (const t of p.tools) {
      const name = p.exposed(t.name);
      routes.set(name, { plugin: p, name: t.name });
      tools.push({ ...t, name });
    }
  }
  const server = new Server(
    { name: 'node-peer', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true }, logging: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const route = routes.get(req.params.name);
    if (!route) {
      return { isError: true, content: [{ type: 'text', text: `unknown tool ${req.params.name}` }] };
    }
    return route.plugin.callTool(route.name, req.params.arguments, extra.requestId, req.params._meta);
  });
  return server;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text ? JSON.parse(text) : undefined);
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', reject);
  });
}

async function serveHTTP(addr, plugins) {
  const sessions = new Map(); // session id -> transport
  const httpServer = createServer(async (req, res) => {
    try {
      const url = new URL(req.url, 'http://localhost');
      if (url.pathname !== '/mcp') {
        res.writeHead(404).end();
        return;
      }
      const sid = req.headers['mcp-session-id'];
      if (req.method === 'POST') {
        const body = await readBody(req);
        let transport = sid ? sessions.get(sid) : undefined;
        if (!transport) {
          if (sid || !isInitializeRequest(body)) {
            res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' }).end(JSON.stringify({
              jsonrpc: '2.0',
              error: { code: -32000, message: sid ? 'unknown session' : 'no session' },
              id: null,
            }));
            return;
          }
          transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (id) => sessions.set(id, transport),
          });
          transport.onclose = () => {
            if (transport.sessionId) sessions.delete(transport.sessionId);
          };
          await newServer(plugins).connect(transport);
        }
        await transport.handleRequest(req, res, body);
        return;
      }
      const transport = sid ? sessions.get(sid) : undefined;
      if (!transport) {
        res.writeHead(sid ? 404 : 400).end();
        return;
      }
      await transport.handleRequest(req, res);
    } catch (err) {
      log('request failed:', err);
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  const i = addr.lastIndexOf(':');
  const host = addr.slice(0, i) || '127.0.0.1';
  const port = Number(addr.slice(i + 1));
  await new Promise((resolve) => httpServer.listen(port, host, resolve));
  const a = httpServer.address();
  log(`serving MCP over Streamable HTTP url=http://${a.address}:${a.port}/mcp`);
  const stop = () => {
    httpServer.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const opts = parseArgs(process.argv.slice(2));
const start = performance.now();
const plugins = await Promise.all(opts.plugins.map(({ path, prefix }) => HostedPlugin.load(path, prefix)));
log(`plugins ready count=${plugins.length} elapsed=${Math.round(performance.now() - start)}ms`);
if (opts.http) {
  await serveHTTP(opts.http, plugins);
} else {
  const transport = new StdioServerTransport();
  transport.onclose = () => process.exit(0);
  await newServer(plugins).connect(transport);
  process.stdin.on('end', () => process.exit(0));
}
