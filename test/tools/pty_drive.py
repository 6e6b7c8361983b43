#!/usr/bin/env python3
"""Drives an interactive program through a pseudo-terminal, like a person at a keyboard.

usage: pty_drive.py STEPS.json -- CMD ARGS...
STEPS: [{"expect": REGEX, "timeout": S} | {"send": TEXT} | {"sleep": S} | {"sigint": true}]
Prints JSON {"ok": bool, "failed_step": i|null, "transcript": str, "exit": code|null}.
"""
import json, os, pty, re, select, signal, sys, time

def main():
    steps = json.load(open(sys.argv[1]))
    cmd = sys.argv[sys.argv.index('--') + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.environ['TERM'] = 'dumb'
        os.execvp(cmd[0], cmd)
    buf = b''
    pos = 0  # expectations match only output after the previous match

    def read_for(t):
        nonlocal buf
        end = time.time() + t
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    return False
                if not data:
                    return False
                buf += data
        return True

    failed = None
    for i, s in enumerate(steps):
        if 'send' in s:
            os.write(fd, s['send'].encode())
        elif 'sigint' in s:
            os.write(fd, b'\x03')  # Ctrl+C as the terminal sends it
        elif 'sleep' in s:
            read_for(s['sleep'])
        elif 'expect' in s:
            rx = re.compile(s['expect'].encode(), re.S)
            deadline = time.time() + s.get('timeout', 30)
            while True:
                m = rx.search(buf, pos)
                if m:
                    pos = m.end()
                    break
                if time.time() > deadline or not read_for(0.1):
                    if not rx.search(buf, pos):
                        failed = i
                        break
            if failed is not None:
                break
    code = None
    end = time.time() + 10
    while time.time() < end:
        read_for(0.1)
        p, status = os.waitpid(pid, os.WNOHANG)
        if p:
            code = os.waitstatus_to_exitcode(status)
            break
    if code is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    print(json.dumps({'ok': failed is None, 'failed_step': failed, 'transcript': buf.decode('utf-8', 'replace'), 'exit': code}))

main()
