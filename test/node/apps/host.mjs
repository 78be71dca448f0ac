// The host page's script for apps.test.mjs: a minimal MCP Apps host, as a
// chat client that shows views would be, built on the extension's own
// host library (AppBridge of @modelcontextprotocol/ext-apps) and the MCP
// TypeScript SDK v2 client. The test bundles it with esbuild at test time
// (browsers do not resolve bare imports) and serves it as /host.js.
//
// With ?era=2026-07-28 the client pins that revision; without, it speaks
// the 2025-era handshake (2025-11-25). It connects to /mcp on the page's
// own origin (the test's proxy to Hangar, which sends no CORS headers),
// declaring the UI extension, then does what a host does for the model:
// lists the tools, keeps the app-only ones out of the model's list, calls
// each tool that has a view, reads the view and renders it in a sandboxed
// iframe, handing it the tool's input and result once it is initialized.
// What the view asks for (tools/call, resources/read) goes through the
// bridge to the same MCP session.
//
// The host gives the views no hostContext.toolInfo, on purpose: a view
// would derive its tool prefix from it, and the test is to show that the
// tag Hangar inserts (com.github.hangar-mcp/tool-prefix) is what tells a
// prefixed plugin's view its tools' names.
//
// Everything the test asserts is in window.hangarTest; the page shows the
// same for a person (and the screenshot in docs/apps.md).

import {
  AppBridge,
  PostMessageTransport,
  buildAllowAttribute,
  getToolUiResourceUri,
  isToolVisibilityAppOnly,
} from '@modelcontextprotocol/ext-apps/app-bridge';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const UI_EXTENSION = 'io.modelcontextprotocol/ui';
const APP_MIME_TYPE = 'text/html;profile=mcp-app';
const HOST_INFO = { name: 'hangar-browser-test-host', version: '1.0.0' };

/** What the test reads. */
const state = {
  era: new URLSearchParams(location.search).get('era') ?? '',
  version: undefined, // the negotiated protocol version
  extensions: undefined, // the server's capabilities.extensions
  tools: [], // every tool name the session lists
  modelTools: [], // the names the model would see
  views: [], // {uri, tool, frameId, mimeType, ui, initialized}
  calls: [], // the views' tools/call requests: {view, name, ok, text}
  done: false, // every view is loaded and has its tool result
  error: undefined, // the first thing that went wrong, as text
};
window.hangarTest = state;

const $ = (id) => document.getElementById(id);

function log(line) {
  $('log').textContent += line + '\n';
}

function fail(err) {
  const text = String(err?.stack ?? err);
  state.error ??= text;
  $('error').textContent = text;
  log('error: ' + text);
}

/** The text blocks of a tool result, joined. */
function textOf(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

/** Every tool of the session, across pages. */
async function listTools(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/**
 * The Content-Security-Policy the extension's specification prescribes for
 * a view: its default (no network, inline script and style only) widened
 * by exactly the domains the view's _meta.ui.csp declares.
 */
function cspFor(csp = {}) {
  const list = (xs) => (xs ?? []).join(' ');
  const resources = list(csp.resourceDomains);
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${resources}`,
    `style-src 'self' 'unsafe-inline' ${resources}`,
    `img-src 'self' data: ${resources}`,
    `font-src 'self' ${resources}`,
    `media-src 'self' data: ${resources}`,
    `connect-src ${list(csp.connectDomains) || "'none'"}`,
    `frame-src ${list(csp.frameDomains) || "'none'"}`,
    `base-uri ${list(csp.baseUriDomains) || "'self'"}`,
  ].map((d) => d.trim()).join('; ');
}

/** html with a CSP <meta> as the first thing in its <head>. */
function withCSP(html, csp) {
  const tag = `<meta http-equiv="Content-Security-Policy" content="${cspFor(csp).replaceAll('"', '&quot;')}">`;
  const head = /<head(\s[^>]*)?>/i.exec(html);
  if (!head) return tag + html;
  const at = head.index + head[0].length;
  return html.slice(0, at) + tag + html.slice(at);
}

/** The HTML of a view's read contents, text or base64 blob. */
function htmlOf(contents) {
  if (typeof contents.text === 'string') return contents.text;
  const bytes = Uint8Array.from(atob(contents.blob), (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/**
 * Calls tool as the model would, reads its view and renders it in a
 * sandboxed iframe. Resolves once the view has its tool result.
 */
async function openView(client, tools, tool, uri) {
  const args = {};
  const result = await client.callTool({ name: tool.name, arguments: args });
  const read = await client.readResource({ uri });
  const contents = read.contents.find((c) => c.uri === uri);
  if (!contents) throw new Error(`resources/read ${uri}: no contents with that URI: ${JSON.stringify(read)}`);
  if (contents.mimeType !== APP_MIME_TYPE) throw new Error(`${uri}: MIME type ${contents.mimeType}, want ${APP_MIME_TYPE}`);
  const ui = contents._meta?.ui;
  const view = {
    uri,
    tool: tool.name,
    frameId: 'view-' + uri.replace(/[^a-z0-9]+/gi, '-'),
    mimeType: contents.mimeType,
    ui: ui ?? null,
    initialized: false,
  };
  state.views.push(view);

  const box = document.createElement('section');
  box.className = 'view';
  box.appendChild(document.createElement('h2')).textContent = uri;
  box.appendChild(document.createElement('p')).className = 'meta';
  box.lastChild.textContent = `opened by ${tool.name}; _meta.ui ${JSON.stringify(ui ?? {})}`;
  const frame = document.createElement('iframe');
  frame.id = view.frameId;
  frame.title = uri;
  // No allow-same-origin: the view's origin is opaque, apart from the
  // host's; it reaches the host only by postMessage.
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.setAttribute('allow', buildAllowAttribute(ui?.permissions));
  box.appendChild(frame);
  $('views').appendChild(box);

  const bridge = new AppBridge(client, HOST_INFO, { serverTools: {}, serverResources: {}, logging: {} }, {
    hostContext: { theme: 'light', displayMode: 'inline', platform: 'web' },
  });
  bridge.onsizechange = ({ height }) => {
    if (height > 0) frame.style.height = `${Math.min(Math.ceil(height) + 4, 600)}px`;
  };
  const initialized = new Promise((resolve) => {
    bridge.oninitialized = () => {
      view.initialized = true;
      bridge.sendToolInput({ arguments: args });
      bridge.sendToolResult(result);
      resolve();
    };
  });
  // The bridge listens before the view loads, or the view's ui/initialize
  // would be lost: connect first, then set srcdoc. The iframe's window
  // stays the same object across that navigation.
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));

  // AppBridge forwards every tools/call of the view to the server. A host
  // must refuse the tools not visible to apps; do so, and record each
  // call for the test.
  const forward = bridge.oncalltool;
  bridge.oncalltool = async (params, extra) => {
    const call = { view: uri, name: params.name, ok: false, text: '' };
    state.calls.push(call);
    const target = tools.find((t) => t.name === params.name);
    const visibility = target?._meta?.ui?.visibility ?? ['model', 'app'];
    if (target && !visibility.includes('app')) {
      call.text = 'refused by the host: not visible to apps';
      throw new Error(`tool ${params.name} is not visible to apps`);
    }
    try {
      const res = await forward(params, extra);
      call.ok = !res.isError;
      call.text = textOf(res);
      return res;
    } catch (err) {
      call.text = String(err?.message ?? err);
      throw err;
    }
  };

  frame.srcdoc = withCSP(htmlOf(contents), ui?.csp);
  await initialized;
  log(`${uri}: initialized`);
}

async function main() {
  const options = { capabilities: { extensions: { [UI_EXTENSION]: { mimeTypes: [APP_MIME_TYPE] } } } };
  if (state.era === '2026-07-28') options.versionNegotiation = { mode: { pin: state.era } };
  const client = new Client(HOST_INFO, options);
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', location.href)));
  state.version = client.getNegotiatedProtocolVersion();
  state.extensions = client.getServerCapabilities()?.extensions ?? null;
  $('version').textContent = `MCP ${state.version}, Streamable HTTP`;
  $('extensions').textContent = JSON.stringify(state.extensions);

  const tools = await listTools(client);
  state.tools = tools.map((t) => t.name);
  const forModel = tools.filter((t) => !isToolVisibilityAppOnly(t));
  state.modelTools = forModel.map((t) => t.name);
  $('model-tools').textContent = state.modelTools.join(', ');

  for (const tool of forModel) {
    const uri = getToolUiResourceUri(tool);
    if (uri) await openView(client, tools, tool, uri);
  }
  state.done = true;
  log('done');
}

main().catch(fail);
