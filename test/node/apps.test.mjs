// MCP Apps in a real browser: plugins' views load in headless Chromium
// through the extension's own host library (AppBridge), and the tool calls
// the views make come back into their DOM, over Streamable HTTP at MCP
// 2025-11-25 and at 2026-07-28.
//
// Two prefixed plugins both ship ui://dashboard: examples/dashboard as
// "alpha", and as "beta" the plugin `hangar new --template app` writes,
// generated and built here, unchanged. Each view must find its plugin's
// tool prefix in the tag Hangar inserts (the host gives it no toolInfo to
// guess from), under the ui:// URI Hangar rewrites, or its call fails.
//
// The pieces:
//   apps/host.html, apps/host.mjs  the host page; host.mjs is bundled with
//                                  esbuild here, in memory, with its npm
//                                  imports, and served as /host.js
//   a node:http server             serves the page and passes /mcp through
//                                  to hangar, so the page and /mcp share one
//                                  origin (Hangar sends no CORS headers)
//   puppeteer-core                 drives the system's Chromium (Debian's
//                                  chromium; scripts/deps.sh installs it),
//                                  downloading nothing
//
// Environment:
//   HANGAR_CHROMIUM=PATH          the Chromium to run (default /usr/bin/chromium)
//   HANGAR_APPS_SCREENSHOT=FILE   write a screenshot of the host page at
//                                 2026-07-28 to FILE (relative to the
//                                 repository root), as in docs/apps.md

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import * as esbuild from 'esbuild';
import puppeteer from 'puppeteer-core';

import { REPO, build, run, startHangar } from './harness.mjs';

const ERAS = ['2025-11-25', '2026-07-28'];
const CHROMIUM = process.env.HANGAR_CHROMIUM || '/usr/bin/chromium';
const SCREENSHOT = process.env.HANGAR_APPS_SCREENSHOT;
const UI_EXTENSION = 'io.modelcontextprotocol/ui';
const PREFIX_META = 'com.github.hangar-mcp/tool-prefix';

// Generous: a loaded 2-core machine starts Chromium and compiles the
// plugins slowly. Each wait says what it did not see.
const WAIT_MS = 60_000;

/** The views, by plugin, and what each must show once its call returned. */
const VIEWS = [
  {
    prefix: 'alpha', // examples/dashboard
    uri: 'ui://alpha+dashboard',
    title: 'Alpha board',
    result: '3 of 4 services up',
    // dashboard shows the text of the model's call it was opened for.
    summary: 'Alpha board: 3 of 4 services up; down: queue.',
  },
  {
    prefix: 'beta', // hangar new --template app
    uri: 'ui://beta+dashboard',
    title: 'Beta tasks',
    result: '3 open, 12 done',
  },
];

describe('MCP Apps views in headless Chromium', { timeout: 20 * 60_000 }, () => {
  let tmp; // this file's temporary directory
  let hangar;
  let proxy;
  let browser;

  before(async () => {
    if (!fs.existsSync(CHROMIUM)) {
      throw new Error(`no Chromium at ${CHROMIUM}: run scripts/deps.sh (it installs Debian's chromium) or set HANGAR_CHROMIUM`);
    }
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'hangar-apps-test-'));
    const b = await build();

    // The app template's plugin, as an author gets it, built as its
    // README says.
    const scaffold = path.join(tmp, 'scaffoldapp');
    await run(b.hangar, ['new', '--template', 'app', '--hangar-dir', REPO, 'scaffoldapp', scaffold], { cwd: tmp });
    const scaffoldWasm = path.join(tmp, 'scaffoldapp.wasm');
    await run('go', ['build', '-buildmode=c-shared', '-o', scaffoldWasm, '.'], {
      cwd: scaffold,
      env: { ...process.env, GOOS: 'wasip1', GOARCH: 'wasm' },
    });
    // Compiled into the run's cache now, as the harness does with its
    // plugins, so that hangar starts quickly on a busy machine.
    await run(b.hangar, ['inspect', '--cache-dir', b.cache, scaffoldWasm], { cwd: tmp });

    const bundle = await esbuild.build({
      entryPoints: [path.join(import.meta.dirname, 'apps', 'host.mjs')],
      bundle: true,
      format: 'iife',
      platform: 'browser',
      target: 'chrome120',
      write: false,
      logLevel: 'silent',
    });

    hangar = await startHangar('http', {
      plugins: [
        { name: 'alpha', plugin: 'dashboard', prefix: 'alpha', config: { title: VIEWS[0].title } },
        { name: 'beta', path: scaffoldWasm, prefix: 'beta', config: { title: VIEWS[1].title } },
      ],
    });
    proxy = await startProxy(hangar.url, {
      '/': { type: 'text/html; charset=utf-8', body: await fsp.readFile(path.join(import.meta.dirname, 'apps', 'host.html')) },
      '/host.js': { type: 'text/javascript; charset=utf-8', body: bundle.outputFiles[0].contents },
    });

    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      userDataDir: path.join(tmp, 'chromium-profile'),
      // CI runs as root, where Chromium will not start with its sandbox;
      // containers have a small /dev/shm.
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
      timeout: WAIT_MS,
    });
    const child = browser.process();
    process.on('exit', () => child?.kill('SIGKILL'));
  });

  after(async () => {
    const problems = [];
    if (browser) {
      const child = browser.process();
      await Promise.race([browser.close().catch(() => {}), sleep(10_000, undefined, { ref: false })]);
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    await proxy?.close();
    try {
      await hangar?.close();
    } catch (err) {
      problems.push(err);
    }
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
    if (problems.length) throw problems[0];
  });

  for (const era of ERAS) {
    test(`views call their plugins' tools at ${era}`, { timeout: 5 * 60_000 }, async () => {
      const page = await browser.newPage();
      const consoleLines = [];
      page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
      page.on('pageerror', (err) => consoleLines.push(`page error: ${err.message}`));
      const context = () =>
        `\nrequests to /mcp: ${JSON.stringify(proxy.requests)}\nbrowser console:\n${consoleLines.join('\n') || '(nothing)'}\nhangar stderr (end):\n${hangar.stderr().slice(-3000)}`;
      try {
        await page.setViewport({ width: 940, height: 440 });
        proxy.requests.length = 0;
        await page.goto(`${proxy.url}/?era=${era}`, { timeout: WAIT_MS });

        const state = await waitForHost(page, 'the host to open every view and hand it its tool result', (s) => s.done, context);
        assert.equal(state.version, era, 'negotiated protocol version');
        assert.deepEqual(state.extensions?.[UI_EXTENSION], {}, `server capabilities.extensions: ${JSON.stringify(state.extensions)}`);
        for (const v of VIEWS) {
          // A client that declared the extension is listed the app-only
          // tools; the host keeps them from the model.
          assert.ok(state.tools.includes(`${v.prefix}_dashboard_data`), `tools/list: ${state.tools}`);
          assert.ok(!state.modelTools.includes(`${v.prefix}_dashboard_data`), `model's tools: ${state.modelTools}`);
          assert.ok(state.modelTools.includes(`${v.prefix}_show_dashboard`), `model's tools: ${state.modelTools}`);
        }
        assert.deepEqual(
          state.views.map((v) => [v.uri, v.tool, v.ui]),
          VIEWS.map((v) => [v.uri, `${v.prefix}_show_dashboard`, { prefersBorder: true }]),
          'views opened: URI, the tool that opened it, _meta.ui as declared',
        );

        for (const v of VIEWS) {
          const frameId = state.views.find((x) => x.uri === v.uri).frameId;
          const dom = await waitInView(page, frameId, `${v.uri} to show the result of its call of ${v.prefix}_dashboard_data`,
            (d) => d.status === 'ready' && (v.summary === undefined || d.summary === v.summary), context);
          assert.equal(dom.prefix, `${v.prefix}_`, `${v.uri}: the ${PREFIX_META} tag Hangar inserts`);
          assert.equal(dom.tool, `${v.prefix}_dashboard_data`, `${v.uri}: the tool the view calls`);
          assert.equal(dom.title, v.title, `${v.uri}: title, from the plugin's config through the call`);
          assert.equal(dom.result, v.result, `${v.uri}: #result`);
        }
        const calls = (await hostState(page)).calls;
        for (const v of VIEWS) {
          const mine = calls.filter((c) => c.view === v.uri);
          assert.deepEqual(mine.map((c) => [c.name, c.ok]), [[`${v.prefix}_dashboard_data`, true]], `${v.uri}: its tools/call requests: ${JSON.stringify(mine)}`);
        }

        // A call the user starts: Refresh in alpha's view calls again.
        const alpha = VIEWS[0];
        const frame = await viewFrame(page, state.views.find((x) => x.uri === alpha.uri).frameId);
        await frame.click('#refresh');
        await waitForHost(page, `a second ${alpha.prefix}_dashboard_data call from ${alpha.uri} after a click on Refresh`,
          (s) => s.calls.filter((c) => c.view === alpha.uri && c.ok).length === 2, context);

        // Every request after the handshake carried the era's version.
        const versions = [...new Set(proxy.requests.map((r) => r.version).filter(Boolean))];
        assert.deepEqual(versions, [era], 'MCP-Protocol-Version headers the page sent');
        const failed = proxy.requests.filter((r) => !(r.status >= 200 && r.status < 300));
        assert.deepEqual(failed, [], 'requests to /mcp not answered with 2xx');

        if (SCREENSHOT && era === ERAS.at(-1)) {
          const file = path.resolve(REPO, SCREENSHOT);
          await fsp.mkdir(path.dirname(file), { recursive: true });
          await page.screenshot({ path: file, fullPage: true });
        }
      } finally {
        await page.close().catch(() => {});
      }
    });
  }
});

/** The host page's window.hangarTest. */
function hostState(page) {
  return page.evaluate(() => window.hangarTest);
}

/**
 * Waits until pred(window.hangarTest) holds and returns the state; fails at
 * once if the host recorded an error, and after WAIT_MS with what it saw.
 */
async function waitForHost(page, what, pred, context) {
  const deadline = Date.now() + WAIT_MS;
  let state;
  for (;;) {
    state = await hostState(page).catch(() => undefined);
    if (state?.error) throw new Error(`host page failed while waiting for ${what}: ${state.error}${context()}`);
    if (state && pred(state)) return state;
    if (Date.now() > deadline) {
      throw new Error(`not seen within ${WAIT_MS / 1000}s: ${what}; host state: ${JSON.stringify(state)}${context()}`);
    }
    await sleep(200);
  }
}

/** The frame of the view in iframe#id. */
async function viewFrame(page, id) {
  const handle = await page.$(`iframe#${id}`);
  if (!handle) throw new Error(`no iframe#${id} in the host page`);
  const frame = await handle.contentFrame();
  if (!frame) throw new Error(`iframe#${id} has no frame`);
  return frame;
}

/**
 * Waits until pred holds of what the view in iframe#id shows and returns
 * it. The frame is looked up again each time, since Chromium may move a
 * sandboxed frame to another process when it navigates to its srcdoc. A
 * view that shows "error: ..." fails the wait at once.
 */
async function waitInView(page, id, what, pred, context) {
  const deadline = Date.now() + WAIT_MS;
  let dom;
  let lastErr;
  for (;;) {
    try {
      const frame = await viewFrame(page, id);
      dom = await frame.evaluate((meta) => {
        const text = (id) => document.getElementById(id)?.textContent ?? null;
        return {
          status: text('status'),
          title: text('title'),
          result: text('result'),
          summary: text('summary'),
          tool: document.getElementById('refresh')?.dataset.tool ?? null,
          prefix: document.querySelector(`meta[name="${meta}"]`)?.content ?? null,
        };
      }, PREFIX_META);
      lastErr = undefined;
    } catch (err) {
      lastErr = err; // the frame is navigating or moving; look again
    }
    if (dom?.status?.startsWith('error')) {
      throw new Error(`${id} failed while waiting for ${what}: the view shows "${dom.status}"; view: ${JSON.stringify(dom)}; host: ${JSON.stringify(await hostState(page).catch(() => null))}${context()}`);
    }
    if (dom && pred(dom)) return dom;
    if (Date.now() > deadline) {
      throw new Error(`not seen within ${WAIT_MS / 1000}s: ${what}; view: ${JSON.stringify(dom)}${lastErr ? `; last error: ${lastErr.message}` : ''}${context()}`);
    }
    await sleep(200);
  }
}

/**
 * Starts an HTTP server on 127.0.0.1 that serves files (path to {type,
 * body}) and passes every request for /mcp, streamed both ways, to the MCP
 * endpoint target. It records each /mcp request's method,
 * MCP-Protocol-Version header and answer's status in requests.
 */
async function startProxy(target, files) {
  const upstream = new URL(target);
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://proxy');
    if (url.pathname === '/mcp') {
      const record = { method: req.method, version: req.headers['mcp-protocol-version'], status: 0 };
      requests.push(record);
      const up = http.request({
        host: upstream.hostname,
        port: upstream.port,
        path: upstream.pathname + url.search,
        method: req.method,
        headers: { ...req.headers, host: upstream.host },
      }, (answer) => {
        record.status = answer.statusCode;
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      });
      up.on('error', (err) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`proxy: ${err.message}`);
      });
      // The page going away (an SSE stream it drops) ends the upstream
      // request too.
      res.on('close', () => up.destroy());
      req.pipe(up);
      return;
    }
    const file = req.method === 'GET' && files[url.pathname];
    if (!file) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store' }).end(file.body);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
