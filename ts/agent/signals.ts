/**
 * The agent's exit on SIGTERM / SIGHUP (a closed terminal, a supervisor): the background processes
 * it started (detached process groups, tools.ts Processes) go with it instead of outliving it.
 * The exit status is the shell's for the signal (128 + its number).
 */
export function exitWithAgentOnSignals(stop: () => void, exit: (code: number) => void = (c) => process.exit(c)): () => void {
  const on = (sig: NodeJS.Signals) => {
    try { stop(); } catch { /* exiting anyway */ }
    exit(sig === 'SIGHUP' ? 129 : 143);
  };
  process.once('SIGTERM', on);
  process.once('SIGHUP', on);
  return () => { process.off('SIGTERM', on); process.off('SIGHUP', on); };
}
