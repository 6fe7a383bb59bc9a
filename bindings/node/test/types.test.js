'use strict';
// index.d.ts declares exactly what the package exports (make check-node
// also type-checks test/types/usage.ts against it with tsc).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const syncmem = require('..');

test('types: index.d.ts declares every export and nothing else', () => {
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');
  const declared = [...dts.matchAll(/^export declare (?:function|const|class) (\w+)/gm)].map((m) => m[1]);
  assert.deepStrictEqual([...new Set(declared)].sort(), Object.keys(syncmem).sort());
});
