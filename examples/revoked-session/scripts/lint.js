'use strict';
// A stand-in linter: flags `var` and `==` in src/. Exits 1 when it finds any.
const fs = require('node:fs');
const path = require('node:path');

let problems = 0;
for (const name of fs.readdirSync(path.join(__dirname, '..', 'src'))) {
  const file = path.join('src', name);
  fs.readFileSync(path.join(__dirname, '..', file), 'utf8').split('\n').forEach((line, i) => {
    if (/\bvar\s/.test(line) || /[^=!]==[^=]/.test(line)) {
      console.log(`${file}:${i + 1}: use const/let and ===`);
      problems++;
    }
  });
}
console.log(problems ? `${problems} problem(s)` : 'lint: clean');
process.exit(problems ? 1 : 0);
