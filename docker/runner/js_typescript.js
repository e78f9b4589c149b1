'use strict';
/*
 * TypeScript for the JavaScript worker (js_worker.js, which loads this module in typescript
 * sessions only): each cell is transpiled alone with the image's compiler (Debian's
 * node-typescript, typescript.transpileModule: types erased, never checked) to ES2022 and
 * CommonJS, and the positions of a stack trace are mapped back to the cell's TypeScript lines
 * through the source map the compiler gives (decoded here: base64 VLQ). Runs in the worker's
 * process, on the untrusted side, like the worker; it holds no state between cells.
 */

const fs = require('fs');

/* The image's compiler by its path first: `require('typescript')` alone would find a typescript
 * the session installed (NODE_PATH, /workspace/.runbox/node_modules) or put in /workspace first. */
const IMAGE_TYPESCRIPT = '/usr/share/nodejs/typescript';
let ts = null;
try {
    ts = fs.existsSync(IMAGE_TYPESCRIPT) ? require(IMAGE_TYPESCRIPT) : require('typescript');
} catch (e) {
    fs.writeSync(2, `runbox: cannot load the TypeScript compiler: ${e.message}\n`);
}


const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/* The source map's mappings as [[genCol, srcLine, srcCol], ...] per generated line (0-based). */
function decodeMappings(mappings) {
    const lines = [];
    let srcLine = 0;
    let srcCol = 0;
    let src = 0;
    for (const lineText of mappings.split(';')) {
        const segs = [];
        let genCol = 0;
        for (const seg of lineText.split(',')) {
            if (!seg)
                continue;
            const vals = [];
            let value = 0;
            let shift = 0;
            for (const ch of seg) {
                const digit = B64.indexOf(ch);
                value += (digit & 31) << shift;
                if (digit & 32) {
                    shift += 5;
                } else {
                    vals.push(value & 1 ? -(value >>> 1) : value >>> 1);
                    value = 0;
                    shift = 0;
                }
            }
            genCol += vals[0] || 0;
            if (vals.length >= 4) {
                src += vals[1];
                srcLine += vals[2];
                srcCol += vals[3];
                segs.push([genCol, srcLine, srcCol]);
            }
        }
        lines.push(segs);
    }
    return lines;
}

function transpile(code, n) {
    if (ts === null)
        throw new Error('the TypeScript compiler (the image\'s node-typescript) could not be loaded');
    const out = ts.transpileModule(code, {
        fileName: `cell-${n}.ts`,
        reportDiagnostics: true,
        compilerOptions: {
            target: ts.ScriptTarget.ES2022,
            module: ts.ModuleKind.CommonJS,
            sourceMap: true,
            esModuleInterop: true,
            experimentalDecorators: true,
        },
    });
    const diags = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (diags.length) {
        const d = diags[0];
        const pos = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
        const msg = ts.flattenDiagnosticMessageText(d.messageText, '\n');
        const e = new SyntaxError(msg);
        const where = pos ? `<cell-${n}>:${pos.line + 1}` : `<cell-${n}>`;
        const src = pos ? code.split('\n')[pos.line] : '';
        e.stack = `${where}\n${src}\n${' '.repeat(pos ? pos.character : 0)}^\n\nSyntaxError: ${msg} (TS${d.code})`;
        throw e;
    }
    let js = out.outputText.replace(/\n\/\/# sourceMappingURL=.*\s*$/, '\n');
    // transpileModule marks every file as a module; a cell that exports nothing needs no marker
    // (the marker would be its completion value).
    js = js.replace(/^"use strict";\n/, '').replace(/^Object\.defineProperty\(exports, "__esModule", \{ value: true \}\);\n/m, '');
    let map = null;
    try {
        map = decodeMappings(JSON.parse(out.sourceMapText).mappings);
    } catch (e) {
        map = null;
    }
    return { js, map };
}

/* The TypeScript position of generated (1-based) line:col, or null. */
function mapPosition(map, line, col) {
    const segs = map && map[line - 1];
    if (!segs || !segs.length)
        return null;
    let best = segs[0];
    for (const s of segs)
        if (s[0] <= col - 1)
            best = s;
    return [best[1] + 1, best[2] + 1];
}

module.exports = { transpile, mapPosition };
