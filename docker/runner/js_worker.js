'use strict';
/*
 * The JavaScript/TypeScript worker: the Node.js process that runs the user's cells.
 *
 * Started by the supervisor (runbox_runner/supervisor.py) as
 *   node --expose-internals /opt/runbox/js_worker.js COMMAND_FD CONTROL_FD [--typescript]
 * as the sandbox user, in a process group of its own, with fd 1/2 on pipes the supervisor reads
 * and stdin on /dev/null. It speaks the Python worker's control protocol (runbox_runner/protocol.py)
 * on the two pipes: it reads {"n", "code", "limit", "out", "err"} (run cell n, its output to the
 * FIFOs out and err), {"interrupt": n} and {"ack": seq}; it writes {"t": "hello"}, "sync",
 * "result", "error" and "done" messages. This file runs on the untrusted side of the trust
 * boundary: everything in this process is within reach of the user's code; the supervisor
 * enforces timeouts, output caps and restarts from outside.
 *
 * How a cell runs (the `node` REPL's way, with the global context):
 * - Each cell is a vm.Script run in this process's own global context (runInThisContext), so
 *   top-level declarations land in the global scope that every later script shares, and the
 *   value of the cell is the script's completion value (the last expression statement's), shown
 *   with util.inspect as the REPL shows it (not when undefined). Top-level `let`, `const` and
 *   `class` become `var` bindings first (redeclarable), so that a cell can run again.
 * - A cell with top-level `await` does not compile as a script: it is rewritten by Node's own
 *   REPL transform (internal/repl/await: declarations hoisted out of an async function, so they
 *   persist too; lines kept) and its promise is awaited.
 * - TypeScript (js_typescript.js): each cell is transpiled alone (transpileModule, types erased, no type
 *   check: a cell cannot see the types of earlier cells, and checking them would need the whole
 *   session as one program) to ES2022 with a source map that maps the frames of a stack trace
 *   back to the TypeScript lines.
 * - console, process.stdout and process.stderr write synchronously to the cell's FIFOs; what a
 *   timer or promise started by an earlier cell writes goes to that cell's FIFOs (tracked with
 *   AsyncLocalStorage, as the Python worker tracks threads), so the supervisor marks it.
 *   Switching between stdout and stderr waits for the supervisor to read what came before
 *   (sync), which keeps the two streams in write order.
 * - Timeout or interrupt ({"interrupt": n}, then SIGINT): synchronous code is stopped by vm's
 *   breakOnSigint watchdog, a cell waiting on a promise is abandoned at the message, one not
 *   started does not start; the context and its variables are kept. A SIGINT never ends this
 *   process (below). Code that loops forever after an `await` cannot be stopped from inside: the
 *   supervisor then kills this process and starts a fresh one (reset, with the reason).
 * Node.js standard library only (and the image's typescript for TypeScript sessions).
 */

/* Before anything else: SIGINT (the supervisor's interrupt) must never end this process. Node.js
 * leaves it deadly around every run of vm's breakOnSigint: the run removes the process's SIGINT
 * listeners (libuv then restores SIG_DFL) and, when it ends, its stopped watchdog helper installs
 * Node's exit-on-SIGINT handler until the listeners are added back; a SIGINT that landed there
 * killed the worker and reset the session. So the helper (a thread and its SIGINT handler) is
 * started here, with no watchdog of its own, and never stopped: a cell's run only registers with
 * it, and a SIGINT while nothing runs is noted (runWatched below). A libuv SIGINT handle would
 * replace its handler, and restore SIG_DFL when closed: the user's SIGINT listeners are never
 * called. Until this line a SIGINT ends Node.js: the supervisor sends none before the hello. */
const sigintHelper = (() => {
    const warn = process.emitWarning;
    process.emitWarning = () => {};  // "internal/test/binding: for internal testing only"
    try {
        const { internalBinding } = require('internal/test/binding');
        const contextify = internalBinding('contextify');
        return contextify.startSigintWatchdog() === true ? contextify : null;
    } catch (e) {
        return null;
    } finally {
        process.emitWarning = warn;
    }
})();
if (sigintHelper !== null) {
    for (const start of process.listeners('newListener')) {
        if (start.name !== 'startListeningIfSignal')
            continue;
        process.removeListener('newListener', start);
        process.on('newListener', (type, listener) => {
            if (type !== 'SIGINT')
                start.call(process, type, listener);
        });
    }
} else {
    process.on('SIGINT', () => {});  // without the internals: the old way, with its windows
}

const fs = require('fs');
const net = require('net');
const path = require('path');
const stream = require('stream');
const util = require('util');
const vm = require('vm');
const { AsyncLocalStorage } = require('async_hooks');
const { createRequire } = require('module');

const TEXT_CAP_MAX = 4 * 1024 * 1024; // largest result text / traceback of a cell (characters)
const TEXT_CAP_MIN = 4096;
const MARKER_ROOM = 100;
const CELL_FDS_KEPT = 64;             // cells whose FIFOs stay open for their timers' output
const SYNC_WAIT_MS = 5000;            // longest wait for the supervisor's answer to a sync
const WORKSPACE = '/workspace';
const RUNNER_DIR = __dirname + path.sep;  // frames from here are the runner's

const argv = process.argv.slice(2);
const TYPESCRIPT = argv.includes('--typescript');
const fdArgs = argv.filter((a) => /^\d+$/.test(a)).map(Number);
if (fdArgs.length !== 2) {
    fs.writeSync(2, 'usage: js_worker.js COMMAND_FD CONTROL_FD [--typescript] (started by the runner\'s supervisor)\n');
    process.exit(2);
}
const [CMD_FD, CTRL_FD] = fdArgs;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleepMs(ms) {
    Atomics.wait(sleeper, 0, 0, ms);
}

/* Writes all of buf to fd, waiting while a non-blocking pipe is full. */
function writeAll(fd, buf) {
    let off = 0;
    while (off < buf.length) {
        try {
            off += fs.writeSync(fd, buf, off, buf.length - off);
        } catch (e) {
            if (e.code === 'EAGAIN') {
                sleepMs(1);
                continue;
            }
            throw e;
        }
    }
}

function send(msg) {
    writeAll(CTRL_FD, Buffer.from(JSON.stringify(msg) + '\n', 'utf8'));
}

/* text within cap bytes of UTF-8, marker included (as protocol.clip does). */
function clip(text, cap, what) {
    if (text.length * 3 <= cap || Buffer.byteLength(text, 'utf8') <= cap)
        return text;
    const half = Math.floor(Math.max(0, cap - MARKER_ROOM) / 2);
    const data = Buffer.from(text, 'utf8');
    const head = data.subarray(0, half).toString('utf8').replace(/\uFFFD$/, '');
    const tail = data.subarray(data.length - half).toString('utf8').replace(/^\uFFFD/, '');
    return `${head}\n[... ${text.length - head.length - tail.length} characters of the ${what} dropped ...]\n${tail}`;
}

/* Lines (strings) within about cap characters: first lines, a marker, last lines. */
function boundedLines(lines, cap) {
    const lineCap = Math.max(256, Math.floor(cap / 8));
    const head = [];
    const tail = [];
    let headSize = 0;
    let tailSize = 0;
    let droppedLines = 0;
    let droppedChars = 0;
    for (let line of lines) {
        line = clip(line, lineCap, 'line');
        if (headSize + line.length <= cap / 2 && tail.length === 0 && droppedLines === 0) {
            head.push(line);
            headSize += line.length;
            continue;
        }
        tail.push(line);
        tailSize += line.length;
        while (tail.length && tailSize > cap / 2) {
            const old = tail.shift();
            tailSize -= old.length;
            droppedLines++;
            droppedChars += old.length;
        }
    }
    if (droppedLines)
        head.push(`  [... ${droppedLines} lines (${droppedChars} characters) of the traceback dropped ...]\n`);
    return head.concat(tail);
}

/* ---- the command pipe ---------------------------------------------------------------------- */

let cmdBuf = '';
const queue = [];        // commands read but not acted on yet
let sigintsOwed = 0;     // SIGINTs of the interrupts read that have not come yet (one each)
let syncSeq = 0;
let ackSeen = 0;

/* Splits what was read into messages: acks are noted, the rest queued. */
function takeCommands(text) {
    cmdBuf += text;
    let i;
    while ((i = cmdBuf.indexOf('\n')) >= 0) {
        const line = cmdBuf.slice(0, i);
        cmdBuf = cmdBuf.slice(i + 1);
        let msg;
        try {
            msg = JSON.parse(line);
        } catch (e) {
            continue;
        }
        if (msg === null || typeof msg !== 'object')
            continue;
        if (typeof msg.ack === 'number')
            ackSeen = Math.max(ackSeen, msg.ack);
        else
            queue.push(msg);
        if (typeof msg.interrupt === 'number' && sigintHelper !== null)
            sigintsOwed++;
    }
    abandonIfInterrupted();
}

/* Reads the command pipe directly (the event loop is not running): what is there now. */
function readCommandsNow() {
    const buf = Buffer.alloc(65536);
    for (;;) {
        let n;
        try {
            n = fs.readSync(CMD_FD, buf, 0, buf.length, null);
        } catch (e) {
            if (e.code === 'EAGAIN')
                return true;
            return false;
        }
        if (n === 0)
            return false;
        takeCommands(buf.toString('utf8', 0, n));
    }
}

/* Waits until the supervisor has read all output written so far. */
function sync() {
    const seq = ++syncSeq;
    send({ t: 'sync', seq });
    const until = Date.now() + SYNC_WAIT_MS;
    while (ackSeen < seq && Date.now() < until) {
        if (!readCommandsNow())
            return;
        if (ackSeen < seq)
            sleepMs(1);
    }
    if (queue.length)
        setImmediate(serveQueue);
}

/* ---- output ---------------------------------------------------------------------------------- */

const als = new AsyncLocalStorage();
const cellFds = new Map();  // n -> {stdout: fd, stderr: fd}: the FIFOs of cell n
let running = null;         // the n of the running cell
let lastStream = null;

function writeOut(name, chunk) {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk);
    const owner = als.getStore();
    const own = name === 'stdout' ? 1 : 2;
    let fd;
    if (running !== null && (owner === undefined || owner === running)) {
        if (lastStream !== null && lastStream !== name)
            sync();
        lastStream = name;
        fd = (cellFds.get(running) || {})[name];
    } else {
        fd = (cellFds.get(owner) || {})[name];
    }
    try {
        writeAll(fd === undefined ? own : fd, data);
    } catch (e) {
        // EPIPE: the supervisor stopped reading an old cell's FIFO; its output is lost.
    }
}

function outputStream(name) {
    const s = new stream.Writable({
        write(chunk, encoding, cb) {
            writeOut(name, chunk);
            cb();
        },
    });
    s.isTTY = false;
    // a child process given process.stdout/stderr as its stdio gets the cell's FIFO
    Object.defineProperty(s, 'fd', { configurable: true, enumerable: true, get: () => cellFd(name) });
    return s;
}

/* The fd output of stream name goes to now: the FIFO of the cell that is running (or of the
 * earlier cell whose callback runs), else the worker's own pipe. */
function cellFd(name) {
    const owner = als.getStore();
    const cell = running !== null && (owner === undefined || owner === running) ? running : owner;
    const fd = (cellFds.get(cell) || {})[name];
    return fd === undefined ? (name === 'stdout' ? 1 : 2) : fd;
}

/* Child processes that inherit the worker's stdout/stderr ('inherit', fd 1 or 2) get the cell's
 * FIFOs instead, so that their output is the cell's (Node cannot dup2 the FIFOs onto fd 1/2 as
 * the Python worker does). Patched where every spawn passes: ChildProcess.prototype.spawn (raw
 * options) and the internal spawnSync (normalized ones). */
function redirectChildren() {
    let cp;
    try {
        cp = require('internal/child_process');
    } catch (e) {
        return; // without --expose-internals their output is marked as an earlier cell's
    }
    const target = (s, i) => (s === 'inherit' ? i : s);
    const mapRaw = (stdio) => {
        if (stdio === 'inherit')
            stdio = ['inherit', 'inherit', 'inherit'];
        if (!Array.isArray(stdio))
            return stdio;
        return stdio.map((s, i) => {
            const t = target(s, i);
            return t === 1 ? cellFd('stdout') : t === 2 ? cellFd('stderr') : s;
        });
    };
    const spawn = cp.ChildProcess.prototype.spawn;
    cp.ChildProcess.prototype.spawn = function (options) {
        if (options !== null && typeof options === 'object' && options.stdio !== undefined)
            options = Object.assign({}, options, { stdio: mapRaw(options.stdio) });
        return spawn.call(this, options);
    };
    const spawnSync = cp.spawnSync;
    cp.spawnSync = function (options) {
        if (options !== null && typeof options === 'object' && Array.isArray(options.stdio)) {
            options.stdio = options.stdio.map((s, i) => {
                const t = s && s.type === 'inherit' ? i : s && s.type === 'fd' ? s.fd : -1;
                return t === 1 || t === 2 ? { type: 'fd', fd: cellFd(t === 1 ? 'stdout' : 'stderr') } : s;
            });
        }
        return spawnSync.call(this, options);
    };
}
redirectChildren();

const stdoutStream = outputStream('stdout');
const stderrStream = outputStream('stderr');
for (const [name, s] of [['stdout', stdoutStream], ['stderr', stderrStream]])
    Object.defineProperty(process, name, { configurable: true, enumerable: false, get: () => s });
const userConsole = new console.Console({ stdout: stdoutStream, stderr: stderrStream, colorMode: false });
globalThis.console = userConsole;

/* Before cell n: its FIFOs are opened; those of old cells are closed. */
function enterCell(n, out, err) {
    const fds = {};
    for (const [name, p] of [['stdout', out], ['stderr', err]]) {
        if (typeof p === 'string') {
            try {
                fds[name] = fs.openSync(p, 'w');
            } catch (e) {
                // no FIFO: the worker's own pipes carry the cell's output
            }
        }
    }
    cellFds.set(n, fds);
    for (const k of [...cellFds.keys()]) {
        if (cellFds.size <= CELL_FDS_KEPT)
            break;
        for (const fd of Object.values(cellFds.get(k)))
            try {
                fs.closeSync(fd);
            } catch (e) { /* already closed */ }
        cellFds.delete(k);
    }
}

/* ---- the user's global scope ----------------------------------------------------------------- */

const userModule = { exports: {}, id: '<repl>', filename: path.join(WORKSPACE, '<repl>'), loaded: false };
try {
    process.chdir(WORKSPACE);
} catch (e) { /* a test outside a sandbox */ }
globalThis.require = createRequire(path.join(WORKSPACE, '<repl>'));
globalThis.module = userModule;
globalThis.exports = userModule.exports;
globalThis.__filename = userModule.filename;
globalThis.__dirname = WORKSPACE;

let topLevelAwait = null;
let acorn = null;
try {
    topLevelAwait = require('internal/repl/await').processTopLevelAwait;
    acorn = require('internal/deps/acorn/acorn/dist/acorn');
} catch (e) {
    // node without --expose-internals: cells with top-level await fail to compile, and
    // top-level let/const/class cannot be declared again
}

/* The cell with its top-level `let`/`const` declarations made `var` and `class X {}` made
 * `var X = class X {}`, so that running a cell again (or declaring a name again) works as in a
 * notebook instead of failing with "Identifier has already been declared"; lines and most
 * columns are kept. The code unchanged when it does not parse (the compiler reports why). */
function redeclarable(code) {
    if (acorn === null)
        return code;
    let tree;
    try {
        tree = acorn.parse(code, { ecmaVersion: 'latest', allowAwaitOutsideFunction: true, allowHashBang: true,
                                   allowReturnOutsideFunction: false, sourceType: 'script' });
    } catch (e) {
        return code;
    }
    const edits = [];
    for (const node of tree.body) {
        if (node.type === 'VariableDeclaration' && (node.kind === 'let' || node.kind === 'const'))
            edits.push([node.start, node.kind.length, node.kind === 'let' ? 'var' : 'var  ']);
        else if (node.type === 'ClassDeclaration' && node.id)
            edits.push([node.start, 0, `var ${node.id.name} = `]);
    }
    for (const [at, len, text] of edits.reverse())
        code = code.slice(0, at) + text + code.slice(at + len);
    return code;
}

const typescript = TYPESCRIPT ? require(path.join(__dirname, 'js_typescript.js')) : null;
const transpile = (code, n) => typescript.transpile(code, n);
const mapPosition = (map, line, col) => typescript.mapPosition(map, line, col);

/* ---- errors ------------------------------------------------------------------------------------ */

/* Whether a stack frame line belongs to the runner or Node's internals. */
function runnerFrame(line) {
    return line.includes(RUNNER_DIR) || /\(node:|at node:|\(internal\/|at internal\//.test(line) ||
        /^\s*at new Script \(/.test(line) || /^\s*at (Script\.)?runInThisContext/.test(line);
}

function errorReport(e, n, code, map) {
    const isError = e !== null && typeof e === 'object' && typeof e.stack === 'string';
    if (!isError) {
        const shown = util.inspect(e);
        return { ename: 'Uncaught', evalue: shown, traceback: [`Uncaught ${shown}\n`] };
    }
    let ename = 'Error';
    let evalue = '';
    try {
        ename = String(e.name || (e.constructor && e.constructor.name) || 'Error');
        evalue = String(e.message === undefined ? '' : e.message);
    } catch (err) { /* a hostile getter */ }
    let stack = e.stack;
    const cell = `<cell-${n}>`;
    let lines = stack.split('\n');
    if (map !== null) {
        // the decorated source line shown above the message is the JavaScript's: show TypeScript's
        const m = /^<cell-(\d+)>:(\d+)$/.exec(lines[0]);
        const blank = lines.indexOf('');
        if (m && blank > 0 && Number(m[1]) === n) {
            const to = mapPosition(map, Number(m[2]), 1);
            const line = to ? to[0] : Number(m[2]);
            lines = [`${cell}:${line}`, code.split('\n')[line - 1] || ''].concat(lines.slice(blank));
        }
        lines = lines.map((l) => l.replace(/<cell-(\d+)>:(\d+):(\d+)/g, (all, k, ln, col) => {
            if (Number(k) !== n)
                return all;
            const to = mapPosition(map, Number(ln), Number(col));
            return to ? `${cell}:${to[0]}:${to[1]}` : all;
        }));
    }
    lines = lines.filter((l) => !(/^\s+at /.test(l) && runnerFrame(l)));
    while (lines.length && lines[lines.length - 1] === '')
        lines.pop();
    return { ename, evalue, traceback: lines.map((l) => l + '\n') };
}

function sendError(e, n, code, map) {
    let r;
    try {
        r = errorReport(e, n, code, map);
    } catch (err) {
        r = { ename: 'Error', evalue: '<the error could not be shown>', traceback: [] };
    }
    send({
        t: 'error',
        ename: clip(r.ename, 256, 'name'),
        evalue: clip(r.evalue, Math.floor(textCap / 4), 'message'),
        traceback: boundedLines(r.traceback, textCap),
    });
}

/* Errors of callbacks that no cell waits for (timers, promises nobody handled): shown on the
 * stderr of the cell that started them, as the REPL does, and the worker goes on. */
function uncaught(e) {
    try {
        const r = errorReport(e, -1, '', null);
        writeOut('stderr', 'Uncaught ' + r.traceback.join(''));
    } catch (err) { /* nothing more to do */ }
}
process.on('uncaughtException', uncaught);
process.on('unhandledRejection', uncaught);

/* ---- cells ----------------------------------------------------------------------------------------- */

let textCap = 1024 * 1024;
let busy = false;
let abortWait = null;       // rejects the promise a running cell waits on (interrupt)
const interrupted = new Set();

class Interrupted extends Error {}
Interrupted.prototype.name = 'Interrupted';

/* Whether the supervisor has interrupted cell n (the message comes ahead of the SIGINT). */
function interruptedCell(n) {
    return interrupted.has(n) || queue.some((m) => m.interrupt === n);
}

/* A cell that waits on a promise is abandoned when its {"interrupt": n} comes (its SIGINT finds
 * no code to stop), whichever read of the command pipe takes it. */
function abandonIfInterrupted() {
    if (abortWait !== null && running !== null && interruptedCell(running))
        abortWait(new Interrupted('the execution was interrupted while it waited'));
}

/* ---- the run that a SIGINT stops ---------------------------------------------------------------- */

const SETTLE_MS = 500;      // longest wait for the SIGINT of an interrupt read (it follows at once)
const RETRY = Symbol('retry');
const watchedScript = new vm.Script('globalThis[Symbol.for("runbox.watched")]()', { filename: __filename });
let watchedFn = null;
Object.defineProperty(globalThis, Symbol.for('runbox.watched'), { value: () => watchedFn() });

const isSigint = (e) => e !== null && typeof e === 'object' && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
/* A SIGINT came: the one of the oldest interrupt read (the pipe is read first: its message is
 * ahead of it), or one the user's code sent. */
function sigintCame() {
    readCommandsNow();
    if (sigintsOwed > 0)
        sigintsOwed--;
}

/* fn() run as vm's breakOnSigint runs code: Node.js's watchdog is registered while it runs, and a
 * SIGINT then ends it with an ERR_SCRIPT_EXECUTION_INTERRUPTED error. RETRY, without running fn,
 * when a SIGINT came while nothing ran (the helper's pending flag, cleared when a run ends; read
 * in the run, where no SIGINT can set it). Every SIGINT is counted off (sigintCame). The command
 * pipe is never read in such a run: a SIGINT that cut a read short would lose what it read. */
function watched(fn) {
    let pending = false;
    watchedFn = () => {
        if (sigintHelper !== null && sigintHelper.watchdogHasPendingSigint()) {
            pending = true;
            return RETRY;
        }
        return fn();
    };
    try {
        return watchedScript.runInThisContext({ breakOnSigint: true });
    } catch (e) {
        if (isSigint(e))
            sigintCame();
        throw e;
    } finally {
        watchedFn = null;
        if (pending)
            sigintCame();
    }
}

/* Reads the pipe and waits, in runs where they end nothing, until the SIGINTs of the interrupts
 * read have come (each follows its message; the helper thread passes it on to the run registered
 * a little later), at the latest until. */
function settleSigints(until) {
    readCommandsNow();
    while (sigintsOwed > 0 && Date.now() < until) {
        try {
            watched(() => sleepMs(1));
        } catch (e) {
            if (!isSigint(e))
                throw e;
        }
    }
    sigintsOwed = 0;  // (one that never came)
}

/* Runs the cell's script under the watchdog, unless cell n is interrupted. Its code starts only
 * when no SIGINT is on its way: one of an earlier cell (interrupted as it ended: the message came
 * after its done) would stop it, and one of this cell would be lost; a SIGINT that comes after
 * the last look at the pipe, before the code starts, sends it round again. */
function runWatched(script, n) {
    const until = Date.now() + SETTLE_MS;
    for (;;) {
        settleSigints(until);
        if (interruptedCell(n))
            throw new Interrupted('the execution was interrupted before it started');
        let started = false;
        try {
            const value = watched(() => {
                started = true;
                return script.runInThisContext();
            });
            if (value !== RETRY)
                return value;
        } catch (e) {
            if (started || !isSigint(e))
                throw e;
        }
    }
}

function compile(code, n) {
    const filename = `<cell-${n}>`;
    code = redeclarable(code);
    try {
        return { script: new vm.Script(code, { filename }), awaited: false };
    } catch (e) {
        if (!(e instanceof SyntaxError) || topLevelAwait === null || !/\bawait\b/.test(code))
            throw e;
        let wrapped = null;
        try {
            wrapped = topLevelAwait(code);
        } catch (err) {
            wrapped = null;
        }
        if (wrapped === null)
            throw e;
        return { script: new vm.Script(wrapped, { filename }), awaited: true };
    }
}

/* The cell's own environment variables; returns what they were (undefined: unset). */
function setEnv(env) {
    const saved = new Map();
    if (env === null || typeof env !== 'object')
        return saved;
    for (const [k, v] of Object.entries(env)) {
        if (typeof v !== 'string')
            continue;
        saved.set(k, Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined);
        process.env[k] = v;
    }
    return saved;
}

function restoreEnv(saved) {
    for (const [k, v] of saved) {
        if (v === undefined)
            delete process.env[k];
        else
            process.env[k] = v;
    }
}

async function runCell(msg) {
    const n = msg.n;
    const code = String(msg.code);
    if (Number.isInteger(msg.limit))
        textCap = Math.max(TEXT_CAP_MIN, Math.min(msg.limit, TEXT_CAP_MAX));
    enterCell(n, msg.out, msg.err);
    const savedEnv = setEnv(msg.env);
    for (const k of interrupted)
        if (k < n)
            interrupted.delete(k);
    running = n;
    lastStream = null;
    if (typeof msg.cwd === 'string') {
        try {
            process.chdir(msg.cwd);
        } catch (e) {
            writeOut('stderr', `cannot change to the context's directory ${msg.cwd}: ${e.message}\n`);
        }
    }
    let status = 'completed';
    let map = null;
    try {
        let js = code;
        if (TYPESCRIPT)
            ({ js, map } = transpile(code, n));
        const { script, awaited } = compile(js, n);
        let value = als.run(n, () => runWatched(script, n));
        if (awaited) {
            const wait = new Promise((resolve, reject) => {
                abortWait = reject;
            });
            abandonIfInterrupted();  // interrupted while it ran, the message read meanwhile
            value = await Promise.race([value, wait]);
            value = value !== null && typeof value === 'object' ? value.value : undefined;
        }
        abortWait = null;
        if (value !== undefined) {
            let text;
            try {
                text = util.inspect(value, { colors: false });
            } catch (e) {
                text = `<util.inspect failed: ${e && e.message}>`;
            }
            lastStream = null;
            const msg = { t: 'result', text: clip(text, textCap, 'result') };
            if (typeof value === 'string') msg.str = value;  // E2B shows a string as itself
            send(msg);
        }
    } catch (e) {
        abortWait = null;
        status = 'error';
        if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED')
            sendError(new Interrupted('the execution was interrupted'), n, code, null);
        else
            sendError(e, n, code, map);
    } finally {
        running = null;
        interrupted.delete(n);
        restoreEnv(savedEnv);
    }
    settleSigints(Date.now() + SETTLE_MS);  // the SIGINT of its interrupt must not reach the next cell
    send({ t: 'done', n, status });
}

async function serveQueue() {
    if (busy)
        return;
    busy = true;
    try {
        while (queue.length) {
            const msg = queue.shift();
            if (typeof msg.interrupt === 'number') {
                interrupted.add(msg.interrupt);
                continue;
            }
            if (typeof msg.n !== 'number' || typeof msg.code !== 'string')
                continue; // {"reap": [pids]}: Node waits for its children itself
            await runCell(msg);
        }
    } finally {
        busy = false;
    }
}

function main() {
    try {
        fs.writeFileSync('/proc/self/oom_score_adj', '1000');
    } catch (e) { /* not in a sandbox */ }
    const cmd = new net.Socket({ fd: CMD_FD, readable: true, writable: false });
    cmd.setEncoding('utf8');
    cmd.on('data', (text) => {
        takeCommands(text);
        serveQueue();
    });
    cmd.on('end', () => process.exit(0));
    cmd.on('error', () => process.exit(0));
    send({ t: 'hello', pid: process.pid });
}

main();
