// Desktop clients: each entry `hangar client-config` prints (Claude Desktop,
// Cursor, VS Code, Windsurf) launches a working server through the
// TypeScript SDK's stdio client, started exactly as a desktop client starts
// it: the entry's command, args and env, on top of the SDK's minimal default
// environment (HOME, LOGNAME, PATH, SHELL, TERM, USER), from an unrelated
// working directory.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

import { REPO, build, listAll } from './harness.mjs';

const CLIENTS = { claude: 'mcpServers', cursor: 'mcpServers', vscode: 'servers', windsurf: 'mcpServers' };

// The servers' HOME, and so their compilation cache (~/.cache/hangar), is
// a directory of this run, not the user's: the SDK passes HOME on.
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-desktop-home-'));
process.env.HOME = home;
process.on('exit', () => fs.rmSync(home, { recursive: true, force: true }));

/** Runs hangar client-config; returns {entry, key, doc, stderr}. */
async function clientConfig(b, client, config, env = {}) {
  const { stdout, stderr } = await promisify(execFile)(b.hangar, ['client-config', client, '--config', config], {
    env: { ...process.env, ...env },
  });
  const doc = JSON.parse(stdout);
  const key = CLIENTS[client];
  assert.deepEqual(Object.keys(doc), [key], `${client}: ${stdout}`);
  assert.deepEqual(Object.keys(doc[key]), ['hangar'], `${client}: ${stdout}`);
  return { entry: doc[key].hangar, doc, stderr };
}

/**
 * Starts the server of an entry as a desktop client does and connects the
 * TS SDK client to it. The test closes it.
 */
async function launch(t, entry) {
  if (entry.type !== undefined) assert.equal(entry.type, 'stdio');
  const transport = new StdioClientTransport({
    command: entry.command,
    args: entry.args,
    env: entry.env, // the SDK adds its minimal default environment, nothing else
    cwd: '/',
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.setEncoding('utf8');
  transport.stderr.on('data', (d) => { stderr += d; });
  const client = new Client({ name: 'desktop-test', version: '1.0.0' }, { capabilities: {} });
  t.after(() => client.close());
  const ended = new Promise((resolve) => transport.stderr.on('end', resolve));
  try {
    await client.connect(transport, { timeout: 120_000 });
  } catch (err) {
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    throw new Error(`${err.message}\nserver stderr:\n${stderr}`);
  }
  return { client, stderr: () => stderr };
}

/** examples/hangar.yaml, unchanged, beside the example plugins it names. */
function exampleConfig(b) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-desktop-examples-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  for (const name of ['hello', 'notes']) {
    fs.mkdirSync(path.join(dir, name));
    fs.copyFileSync(b.plugins[name], path.join(dir, name, `${name}.wasm`));
  }
  const config = path.join(dir, 'hangar.yaml');
  fs.copyFileSync(path.join(REPO, 'examples', 'hangar.yaml'), config);
  return config;
}

describe('desktop client entries', { timeout: 600_000 }, () => {
  for (const client of Object.keys(CLIENTS)) {
    test(`${client}: the entry for examples/hangar.yaml serves the examples`, async (t) => {
      const b = await build();
      const config = exampleConfig(b);
      const { entry } = await clientConfig(b, client, config);
      assert.deepEqual(entry.args, ['serve', '--stdio', '--config', config]);
      assert.equal(entry.command, b.hangar);
      assert.equal(entry.env, undefined, 'examples/hangar.yaml uses no variable');

      const { client: c } = await launch(t, entry);
      const tools = (await listAll({ client: c }, 'tools')).map((x) => x.name).sort();
      assert.deepEqual(tools, ['add_note', 'base64', 'delete_note', 'greet', 'hash', 'uuid']);
      const res = await c.callTool({ name: 'greet', arguments: { name: 'Ada' } });
      assert.deepEqual(res.content, [{ type: 'text', text: 'Welcome, Ada!' }]);
    });
  }

  test('env block: a value from the environment and a replaced placeholder reach the plugin, nothing else does', async (t) => {
    const b = await build();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-desktop-env-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const config = path.join(dir, 'desk.yaml');
    fs.writeFileSync(config, [
      'http:',
      '  addr: 127.0.0.1:0        # ignored: the entry serves stdio',
      'plugins:',
      '  - name: sandbox',
      `    path: ${b.plugins.hostile}`,
      '    grants:',
      '      env:',
      '        TOKEN: ${HANGAR_DESKTOP_TOKEN}',
      '        REGION: ${HANGAR_DESKTOP_REGION}',
      '',
    ].join('\n'));
    const env = { HANGAR_DESKTOP_TOKEN: 'tok-123' };
    delete process.env.HANGAR_DESKTOP_REGION;
    for (const client of Object.keys(CLIENTS)) {
      const { entry, stderr } = await clientConfig(b, client, config, env);
      assert.deepEqual(entry.env, { HANGAR_DESKTOP_TOKEN: 'tok-123', HANGAR_DESKTOP_REGION: '<value of HANGAR_DESKTOP_REGION>' });
      assert.match(stderr, /env HANGAR_DESKTOP_TOKEN: the value set in this environment/);
      assert.match(stderr, /env HANGAR_DESKTOP_REGION: not set here: replace "<value of HANGAR_DESKTOP_REGION>" with its value/);
    }
    const { entry } = await clientConfig(b, 'claude', config, env);

    // As printed, the placeholder is refused, and stderr (which desktop
    // clients keep in their logs) says what to do.
    await assert.rejects(launch(t, entry), (err) => {
      assert.match(err.message, /environment variable HANGAR_DESKTOP_REGION holds the placeholder/);
      assert.match(err.message, /set\s+it in the "env" block of hangar's entry in the client's configuration/);
      return true;
    });

    // With the placeholder replaced, as the user is told to.
    entry.env.HANGAR_DESKTOP_REGION = 'eu-west';
    const { client: c } = await launch(t, entry);
    const res = await c.callTool({ name: 'env', arguments: {} });
    assert.deepEqual(res.content[0].text.split('\n').sort(), ['REGION=eu-west', 'TOKEN=tok-123']);

    // The server saw only the minimal environment and the entry's env.
    const { client: c2 } = await launch(t, { ...entry, env: { ...entry.env, HANGAR_DESKTOP_TOKEN: 'other' } });
    const res2 = await c2.callTool({ name: 'env', arguments: {} });
    assert.deepEqual(res2.content[0].text.split('\n').sort(), ['REGION=eu-west', 'TOKEN=other']);
    assert.ok(Object.keys(getDefaultEnvironment()).every((k) => ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER'].includes(k)));
  });
});
