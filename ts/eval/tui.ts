/**
 * q36-eval's terminal UI (the default on a terminal): the question list with each one's state,
 * the live stream of the running question (reasoning dim), and keys — p pause/resume, q stop and
 * report, Up/Down select, Enter run the selected question next. Redrawn on the alternate screen
 * a few times a second; the terminal is restored on exit.
 */
import { safeForTerminal } from '../terminal.js';
import type { Question } from './questions.js';
import type { QuestionResult } from './runner.js';

type State = { status: 'pending' | 'queued' | 'running' | 'done' | 'stopped'; result?: QuestionResult };

export class EvalTui {
  private states: State[];
  private sel = 0;
  private queued: number[] = [];
  private current = -1;
  private stream = '';
  private reasoning = false;
  private timer?: NodeJS.Timeout;
  private resume?: () => void;
  paused = false;
  stopped = false;
  /** called on q / Ctrl+C (the runner aborts the running question) */
  onStop?: () => void;

  constructor(private readonly qs: Question[], private readonly out: NodeJS.WriteStream, private readonly input: NodeJS.ReadStream, private readonly title: string) {
    this.states = qs.map(() => ({ status: 'pending' }));
  }

  start(): void {
    this.input.setRawMode?.(true);
    this.input.resume();
    this.input.on('data', this.onKey);
    this.out.write('\x1b[?1049h\x1b[?25l');
    this.timer = setInterval(() => this.render(), 150);
    this.render();
  }

  finish(): void {
    if (this.timer) clearInterval(this.timer);
    this.input.off('data', this.onKey);
    this.input.setRawMode?.(false);
    this.input.pause();
    this.out.write('\x1b[?25h\x1b[?1049l');
  }

  private onKey = (d: Buffer) => {
    // one read can hold several keys (a fast typist, a paste, a test): arrows are 3 bytes each
    for (const m of d.toString('utf8').matchAll(/\x1b\[[A-D]|[\s\S]/g)) this.key(m[0]);
    this.render();
  };

  private key(k: string): void {
    if (k === 'q' || k === '\x03') { this.stopped = true; this.onStop?.(); this.setPaused(false); }
    else if (k === 'p') this.setPaused(!this.paused);
    else if (k === '\x1b[A') this.sel = Math.max(0, this.sel - 1);
    else if (k === '\x1b[B') this.sel = Math.min(this.qs.length - 1, this.sel + 1);
    else if (k === '\r' || k === '\n') {
      const st = this.states[this.sel];
      if (st.status === 'pending') { st.status = 'queued'; this.queued.push(this.sel); }
    }
  }

  private setPaused(p: boolean): void {
    this.paused = p;
    if (!p) { this.resume?.(); this.resume = undefined; }
  }

  /** Resolves when generation may go on (not paused). */
  gate = (): Promise<void> => (this.paused ? new Promise((r) => { this.resume = r; }) : Promise.resolve());

  /** The next question to run: one the user queued with Enter, else the next pending one. */
  next(order: number[]): number | undefined {
    while (this.queued.length) { const i = this.queued.shift()!; if (this.states[i].status === 'queued') return i; }
    return order.find((i) => this.states[i].status === 'pending');
  }

  begin(i: number): void {
    this.states[i].status = 'running';
    this.current = i;
    this.stream = '';
    this.sel = i;
  }

  text(piece: string, reasoning: boolean): void {
    // a model's bytes may hold escape and control characters: shown, never obeyed
    this.stream = (this.stream + safeForTerminal(piece)).slice(-8000);
    this.reasoning = reasoning;
  }

  end(i: number, r: QuestionResult, stopped: boolean): void {
    this.states[i] = { status: stopped ? 'stopped' : 'done', result: r };
    this.render();
  }

  render(): void {
    // (a terminal that reports no size, like a bare pty, gets 80 × 24)
    const cols = Math.max(40, this.out.columns || 80), rows = Math.max(16, this.out.rows || 24);
    const done = this.states.filter((s) => s.status === 'done');
    const passed = done.filter((s) => s.result?.pass).length;
    const head = `${this.paused ? '[paused] ' : ''}${this.stopped ? '[stopping] ' : ''}${this.title}  ${done.length}/${this.qs.length} done, ${passed} passed`;
    const listRows = Math.max(5, Math.floor(rows / 2) - 2);
    const first = Math.max(0, Math.min(this.sel - Math.floor(listRows / 2), this.qs.length - listRows));
    const lines: string[] = [head.slice(0, cols), 'p pause  q stop  ↑/↓ select  Enter run next'.slice(0, cols)];
    for (let i = first; i < Math.min(this.qs.length, first + listRows); i++) {
      const q = this.qs[i], st = this.states[i], r = st.result;
      const mark = st.status === 'done' ? (r!.pass ? 'PASS' : 'FAIL') : st.status === 'running' ? 'RUN ' : st.status === 'queued' ? 'NEXT' : st.status === 'stopped' ? 'STOP' : '    ';
      const detail = r ? `${r.given ?? '—'}/${r.correct}  ${r.generatedTokens} tok  ${(r.ms / 1000).toFixed(1)}s` : '';
      lines.push(`${i === this.sel ? '>' : ' '} ${q.id.padEnd(4)} ${q.category.padEnd(11)} ${mark}  ${detail}`.slice(0, cols));
    }
    const cur = this.current >= 0 ? this.qs[this.current] : undefined;
    lines.push(`── ${cur ? `${cur.id} ${cur.category}${this.reasoning ? ' (thinking)' : ''}` : 'waiting'} ${'─'.repeat(Math.max(0, cols - 20))}`.slice(0, cols));
    const streamRows = rows - lines.length - 1;
    const wrapped = this.stream.split('\n').flatMap((l) => (l.length ? l.match(new RegExp(`.{1,${cols}}`, 'g'))! : ['']));
    const tail = wrapped.slice(-streamRows);
    const body = tail.map((l) => (this.reasoning ? `\x1b[2m${l}\x1b[0m` : l));
    this.out.write(`\x1b[H\x1b[2J${[...lines, ...body].join('\r\n')}`);
  }
}
