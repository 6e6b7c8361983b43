/**
 * The chat page in a real browser: Debian's headless Chromium (scripts/setup.sh installs it)
 * driven by puppeteer-core, against q36-server's app with tinyA on the CPU. The page loads with
 * no policy violation, a message streams to a finished answer, Stop cancels a long one, and a
 * reload keeps the conversation (the next turn's prompt holds it). The docs' screenshot:
 * CHAT_PAGE_SCREENSHOT=docs/img/chat-page.png npx vitest run test/chat-page-browser.test.ts
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import type { FastifyInstance } from 'fastify';
import { openEngine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import type { ServerContext } from '../ts/server/context.js';
import { fixture, tmpDir } from './helpers.js';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
let app: FastifyInstance, ctx: ServerContext, base = '', browser: Browser, page: Page;
const problems: string[] = [];

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium (bash scripts/setup.sh does), or set CHROMIUM`);
  const engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 });
  // long answers (tinyA thinks on and on), so Stop has something to stop
  ({ app, ctx } = await buildApp({ engine, defaultMaxTokens: 400 }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 700 });
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(String(e)));
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  ctx?.coordinator.dispose();
});

/** Texts of the elements matching a selector. */
const texts = (sel: string) => page.$$eval(sel, (es) => es.map((e) => e.textContent ?? ''));
/** Waits until the log has n finished turns (a note line each). */
const notes = (n: number) => page.waitForFunction((k) => document.querySelectorAll('.msg.note').length >= k, { timeout: 90_000 }, n);

describe('the chat page in Chromium', () => {
  it('loads and connects, with no policy violation or script error', async () => {
    await page.goto(`${base}/`);
    await page.waitForFunction(() => !(document.getElementById('send') as HTMLButtonElement).disabled, { timeout: 30_000 });
    expect(await page.$eval('#status', (e) => e.textContent)).toBe('qwen3.6-35b-a3b');
    expect(problems).toEqual([]);
  }, 60_000);

  it('a message streams into an answer: thinking folded, a finish line', async () => {
    await page.type('#input', 'Tell me about lighthouses.');
    await page.keyboard.press('Enter');
    await notes(1);
    expect(await texts('.msg.user')).toEqual(['Tell me about lighthouses.']);
    const shown = await page.$eval('.msg.assistant', (e) => ({ thinking: e.querySelector('details pre')?.textContent ?? '', open: (e.querySelector('details') as HTMLDetailsElement).open, answer: e.querySelector('.content')?.textContent ?? '' }));
    expect(shown.thinking.length + shown.answer.length).toBeGreaterThan(0);
    expect(shown.open).toBe(false);
    expect((await texts('.msg.note'))[0]).toMatch(/^(stop|length) · \d+ tokens · prompt \d+ \(\d+ cached\)$/);
    // the docs' screenshot when asked for (CHAT_PAGE_SCREENSHOT=docs/img/chat-page.png), else a scratch one
    const shot = process.env.CHAT_PAGE_SCREENSHOT ?? path.join(tmpDir(), 'chat-page.png');
    await page.screenshot({ path: path.resolve(shot) });
    expect(fs.statSync(shot).size).toBeGreaterThan(1000);
  }, 120_000);

  it('Stop cancels a running answer', async () => {
    await page.type('#input', 'And another long answer, please.');
    await page.keyboard.press('Enter');
    // once something has streamed, stop it
    await page.waitForFunction(() => { const a = document.querySelectorAll('.msg.assistant'); const last = a[a.length - 1]; return (last?.textContent ?? '').length > 0; }, { timeout: 60_000 });
    await page.click('#stop');
    await notes(2);
    expect((await texts('.msg.note'))[1]).toMatch(/^cancelled · /);
    expect(await page.$eval('#send', (e) => (e as HTMLButtonElement).disabled)).toBe(false);
  }, 120_000);

  it('a reload keeps the conversation, and the next turn\'s prompt holds it', async () => {
    const before = await texts('.msg.user');
    await page.reload();
    await page.waitForFunction(() => !(document.getElementById('send') as HTMLButtonElement).disabled, { timeout: 30_000 });
    expect(await texts('.msg.user')).toEqual(before);
    await page.type('#input', 'Thanks.');
    await page.keyboard.press('Enter');
    await notes(1);
    const promptOf = async () => Number(/prompt (\d+)/.exec((await texts('.msg.note')).at(-1)!)![1]);
    const restored = await promptOf();
    // against the same message in a new chat: the earlier messages are in the restored prompt
    await page.click('#new');
    await page.waitForFunction(() => !(document.getElementById('send') as HTMLButtonElement).disabled && !document.querySelector('.msg'), { timeout: 30_000 });
    await page.type('#input', 'Thanks.');
    await page.keyboard.press('Enter');
    await notes(1);
    expect(restored).toBeGreaterThan((await promptOf()) + 10);
    expect(problems).toEqual([]);
  }, 180_000);
});
