// SPDX-License-Identifier: MIT
// The rectangles benchmark (bench/rects_common.h) on node: flatbush and rbush, the same figures
// and CSV lines as bench_rects_peers.cpp (`peer,figure,ms_median,runs,count,sum,cpu_ms_median`).
//
//   node bench.mjs DATA_DIR flatbush|rbush [--quick] [--frames F]
//
// DATA_DIR holds static.f64, windows.f64 and moving.f64, written by
// `bench_rects_peers --dump DATA_DIR [--quick]` (the same --quick): the rectangles come from C,
// bit for bit, because pow() may differ by an ulp between C and JS. The moves (nbr_move: only
// +, -, * on doubles) are regenerated here with splitmix64 on 32-bit halves; the moving
// figures' count/sum, checked against the C++ peers by report_rects.py, prove they are the
// same moves.
//
//   flatbush  static (packed Hilbert R-tree, nodes of 16): build = new Flatbush(n), add() each
//             rectangle, finish(); windows and pairs by search() with a filter function that
//             tallies and returns false (no result arrays); the moving workload rebuilds it
//             every frame.
//   rbush     dynamic R-tree (nodes of at most 9): build = load() of the rectangles' items
//             (bulk, OMT); search() for windows and pairs; the moving workload does remove()
//             + insert() of every rectangle.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Flatbush from 'flatbush';
import RBush from 'rbush';

const FULL = { nStatic: 1000000, nWindows: 10000, nPairs: 100000, nMoving: 100000, frames: 100 };
const QUICK = { nStatic: 100000, nWindows: 1000, nPairs: 10000, nMoving: 10000, frames: 5 };
const PREFIX_FRAMES = 5; // figure moving_first5, as in bench_rects_peers.cpp
const STEP = 0.5; // NBR_STEP
const SEED_MOVES = 0x6d6f766573000003n; // NBR_SEED_MOVES

function usage() {
    process.stderr.write('usage: node bench.mjs DATA_DIR flatbush|rbush [--quick] [--frames F]\n');
    process.exit(2);
}

const args = process.argv.slice(2);
if (args.length < 2) usage();
const [dataDir, peer] = args;
let quick = false;
let framesArg = 0;
for (let i = 2; i < args.length; i++) {
    if (args[i] === '--quick') quick = true;
    else if (args[i] === '--frames' && i + 1 < args.length) framesArg = Number(args[++i]);
    else usage();
}
if (peer !== 'flatbush' && peer !== 'rbush') usage();
if (framesArg !== 0 && !(Number.isInteger(framesArg) && framesArg >= PREFIX_FRAMES)) usage();
const sz = quick ? QUICK : FULL;

function load(name, n) {
    const path = join(dataDir, name);
    const buf = readFileSync(path);
    if (buf.length !== n * 32) {
        process.stderr.write(`bench.mjs: ${path}: ${buf.length} bytes, expected ${n * 32}` +
                             ` (dumped with the same --quick?)\n`);
        process.exit(2);
    }
    // a copy, aligned for Float64Array (the platform is little-endian, as the file)
    return new Float64Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
}

// ---- splitmix64 on two 32-bit halves (rects_common.h: nbr_next, nbr_unit) ----
const GOLD_HI = 0x9e3779b9, GOLD_LO = 0x7f4a7c15;
const M1_HI = 0xbf58476d, M1_LO = 0x1ce4e5b9;
const M2_HI = 0x94d049bb, M2_LO = 0x133111eb;
const TWO32 = 4294967296;

// The high 32 bits of the 64-bit product of two unsigned 32-bit numbers, from 16-bit limbs
// (every partial product is exact in a double).
function mulHigh32(a, b) {
    const a1 = a >>> 16, a0 = a & 0xffff, b1 = b >>> 16, b0 = b & 0xffff;
    const mid = a1 * b0 + a0 * b1; // < 2^33
    const low = a0 * b0 + (mid % 65536) * 65536; // < 2^33
    return (a1 * b1 + Math.floor(mid / 65536) + Math.floor(low / TWO32)) % TWO32;
}

class SplitMix {
    constructor(seed) {
        this.hi = Number(seed >> 32n) >>> 0;
        this.lo = Number(seed & 0xffffffffn) >>> 0;
        this.zhi = 0;
        this.zlo = 0;
    }
    // (zhi, zlo) * (bhi, blo) mod 2^64 into (zhi, zlo)
    mul(bhi, blo) {
        const hi = (mulHigh32(this.zlo, blo) + Math.imul(this.zhi, blo) + Math.imul(this.zlo, bhi)) >>> 0;
        this.zlo = Math.imul(this.zlo, blo) >>> 0;
        this.zhi = hi;
    }
    // z ^= z >> k, 0 < k < 32
    xorShift(k) {
        this.zlo = (this.zlo ^ ((this.zlo >>> k) | (this.zhi << (32 - k)))) >>> 0;
        this.zhi = (this.zhi ^ (this.zhi >>> k)) >>> 0;
    }
    next() {
        const lo = this.lo + GOLD_LO;
        this.lo = lo >>> 0;
        this.hi = (this.hi + GOLD_HI + (lo >= TWO32 ? 1 : 0)) >>> 0;
        this.zhi = this.hi;
        this.zlo = this.lo;
        this.xorShift(30);
        this.mul(M1_HI, M1_LO);
        this.xorShift(27);
        this.mul(M2_HI, M2_LO);
        this.xorShift(31);
    }
    // uniform in [0, 1), 53 bits: (z >> 11) * 2^-53
    unit() {
        this.next();
        const top = this.zhi >>> 11; // 21 bits
        const bottom = (((this.zhi & 0x7ff) << 21) | (this.zlo >>> 11)) >>> 0; // 32 bits
        return (top * TWO32 + bottom) * (1.0 / 9007199254740992.0);
    }
}

// nbr_move: the same operations in the same order.
function move(r, n, rng) {
    const h = 1000.0 * Math.sqrt(n / 1e6);
    for (let i = 0; i < n; i++) {
        for (let a = 0; a < 2; a++) {
            const lo = r[4 * i + a], hi = r[4 * i + 2 + a];
            const half = 0.5 * (hi - lo);
            let c = 0.5 * (hi + lo);
            c += (2.0 * rng.unit() - 1.0) * STEP;
            if (c > h) c = 2.0 * h - c;
            if (c < -h) c = -2.0 * h - c;
            r[4 * i + a] = c - half;
            r[4 * i + 2 + a] = c + half;
        }
    }
}

// ---- tallies: count and index sum (pairs: i * n + j), printed mod 2^64 ----
class Tally {
    constructor() {
        this.count = 0;
        this.sum = 0;
    }
    add(other) {
        this.count += other.count;
        this.sum += other.sum;
    }
    text() {
        if (!Number.isSafeInteger(this.sum) || !Number.isSafeInteger(this.count)) {
            process.stderr.write('bench.mjs: a tally passed 2^53; it would be inexact\n');
            process.exit(1);
        }
        return `${this.count},${BigInt.asUintN(64, BigInt(this.sum))}`;
    }
}

function median(samples) {
    const s = [...samples].sort((a, b) => a - b);
    return s[(s.length - 1) >> 1];
}

// A timed section's wall-clock and CPU milliseconds (the process's user + system time, which
// includes the garbage collector's threads), pushed onto the figure's samples.
class Clock {
    constructor() {
        this.cpu0 = process.cpuUsage();
        this.wall0 = performance.now();
    }
    stop(wall, cpu) {
        wall.push(performance.now() - this.wall0);
        const c = process.cpuUsage(this.cpu0);
        cpu.push((c.user + c.system) / 1000);
    }
}

function emit(figure, times, cpu, tally) {
    process.stdout.write(`${peer},${figure},${median(times).toFixed(3)},${times.length},` +
                         `${tally.text()},${median(cpu).toFixed(3)}\n`);
}

// ---- the peers: build(r, n) -> index; windows(index, w, m); pairs(index, r, n); for the
// moving workload fill(r, n) -> state, step(state, r, n) (old coordinates still in the state)
// and self(state, r, n) ----
const flatbush = {
    build(r, n) {
        const index = new Flatbush(n);
        for (let i = 0; i < n; i++) index.add(r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
        index.finish();
        return index;
    },
    windows(index, w, m) {
        const t = new Tally();
        const hit = (j) => {
            t.count++;
            t.sum += j;
            return false;
        };
        for (let k = 0; k < m; k++) index.search(w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3], hit);
        return t;
    },
    pairs(index, r, n) {
        const t = new Tally();
        let i = 0;
        const hit = (j) => {
            if (j > i) {
                t.count++;
                t.sum += i * n + j;
            }
            return false;
        };
        for (i = 0; i < n; i++) index.search(r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3], hit);
        return t;
    },
    fill(r, n) {
        return { index: flatbush.build(r, n) };
    },
    step(state, r, n) {
        state.index = flatbush.build(r, n);
    },
    self(state, r, n) {
        return flatbush.windows(state.index, r, n);
    },
};

function items(r, n) {
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
        out[i] = { minX: r[4 * i], minY: r[4 * i + 1], maxX: r[4 * i + 2], maxY: r[4 * i + 3], i };
    }
    return out;
}

const rbush = {
    build(r, n) {
        const tree = new RBush();
        tree.load(items(r, n));
        return tree;
    },
    windows(tree, w, m) {
        const t = new Tally();
        const box = { minX: 0, minY: 0, maxX: 0, maxY: 0 };
        for (let k = 0; k < m; k++) {
            box.minX = w[4 * k];
            box.minY = w[4 * k + 1];
            box.maxX = w[4 * k + 2];
            box.maxY = w[4 * k + 3];
            const found = tree.search(box);
            t.count += found.length;
            for (let q = 0; q < found.length; q++) t.sum += found[q].i;
        }
        return t;
    },
    pairs(tree, r, n) {
        const t = new Tally();
        const box = { minX: 0, minY: 0, maxX: 0, maxY: 0 };
        for (let i = 0; i < n; i++) {
            box.minX = r[4 * i];
            box.minY = r[4 * i + 1];
            box.maxX = r[4 * i + 2];
            box.maxY = r[4 * i + 3];
            const found = tree.search(box);
            for (let q = 0; q < found.length; q++) {
                const j = found[q].i;
                if (j > i) {
                    t.count++;
                    t.sum += i * n + j;
                }
            }
        }
        return t;
    },
    fill(r, n) {
        const all = items(r, n);
        const tree = new RBush();
        for (let i = 0; i < n; i++) tree.insert(all[i]); // as a game adds its objects
        return { tree, all };
    },
    step(state, r, n) {
        const { tree, all } = state;
        for (let i = 0; i < n; i++) {
            const it = all[i];
            tree.remove(it); // by identity, found through its old box
            it.minX = r[4 * i];
            it.minY = r[4 * i + 1];
            it.maxX = r[4 * i + 2];
            it.maxY = r[4 * i + 3];
            tree.insert(it);
        }
    },
    self(state, r, n) {
        return rbush.windows(state.tree, r, n);
    },
};

function checkRuns(figure, a, b) {
    if (a.count !== b.count || a.sum !== b.sum) {
        process.stderr.write(`bench.mjs: ${peer}: ${figure}: runs disagree\n`);
        process.exit(1);
    }
}

function main() {
    const P = peer === 'flatbush' ? flatbush : rbush;
    const rects = load('static.f64', sz.nStatic);
    const windows = load('windows.f64', sz.nWindows);
    const moving = load('moving.f64', sz.nMoving);
    let index = null;

    // build_1m
    let times = [];
    let cpu = [];
    for (let k = 0; k < 7; k++) {
        index = null;
        const c = new Clock();
        index = P.build(rects, sz.nStatic);
        c.stop(times, cpu);
    }
    const built = new Tally();
    built.count = sz.nStatic;
    emit('build_1m', times, cpu, built);

    // windows_10k
    times = [];
    cpu = [];
    let first = null;
    for (let k = 0; k < 7; k++) {
        const c = new Clock();
        const t = P.windows(index, windows, sz.nWindows);
        c.stop(times, cpu);
        if (first === null) first = t;
        else checkRuns('windows_10k', first, t);
    }
    emit('windows_10k', times, cpu, first);

    // pairs_100k, on a tree of the first nPairs rectangles built beforehand
    index = P.build(rects, sz.nPairs);
    times = [];
    cpu = [];
    first = null;
    for (let k = 0; k < 5; k++) {
        const c = new Clock();
        const t = P.pairs(index, rects, sz.nPairs);
        c.stop(times, cpu);
        if (first === null) first = t;
        else checkRuns('pairs_100k', first, t);
    }
    emit('pairs_100k', times, cpu, first);
    index = null;

    // moving_frame (and moving_first5)
    const frames = framesArg || sz.frames;
    const r = new Float64Array(moving);
    const rng = new SplitMix(SEED_MOVES);
    const state = P.fill(r, sz.nMoving);
    const total = new Tally();
    times = [];
    cpu = [];
    for (let f = 0; f < frames; f++) {
        move(r, sz.nMoving, rng);
        const c = new Clock();
        P.step(state, r, sz.nMoving);
        const t = P.self(state, r, sz.nMoving);
        c.stop(times, cpu);
        total.add(t);
        if (f + 1 === PREFIX_FRAMES) emit('moving_first5', times, cpu, total);
    }
    emit('moving_frame', times, cpu, total);
}

main();
