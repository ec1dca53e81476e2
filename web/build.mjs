// Builds the viewer of `relayviz report --html` into the two files the Python package ships:
// relayviz_instrument/html_report/assets/viewer.js and viewer.css (`make web` runs this after
// `npm ci`). The script's first comment lists every npm package it bundles, with its version
// and licence; the licence texts follow at its end. The output is the same for the same lock file.

import {build} from 'esbuild';
import {readFileSync, writeFileSync, mkdirSync, existsSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'relayviz_instrument', 'html_report', 'assets');
const own = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));

const result = await build({
  entryPoints: [join(here, 'src', 'main.js')],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['chrome100', 'firefox100', 'safari15'],
  legalComments: 'none',
  metafile: true,
  write: false,
  charset: 'utf8',
});

// The packages whose files went into the bundle, from esbuild's list of inputs.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (!m || packages.has(m[1])) continue;
  const root = join(here, 'node_modules', m[1]);
  const meta = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const licenceFile = ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'license'].map((f) => join(root, f)).find(existsSync);
  packages.set(m[1], {name: meta.name, version: meta.version, license: meta.license,
                      text: licenceFile ? readFileSync(licenceFile, 'utf8').trim() : ''});
}
const list = [...packages.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
const clean = (text) => text.replace(/\*\//g, '* /');
const header = `/*! relayviz HTML report viewer ${own.version} (${own.license}); built with esbuild from web/.\n` +
  ` * Bundled npm packages (name version licence):\n` +
  list.map((p) => ` *   ${p.name} ${p.version} ${p.license}\n`).join('') + ' */\n';
const licences = '\n/*! Licences of the bundled packages\n\n' +
  list.map((p) => `${p.name} ${p.version}\n\n${clean(p.text)}\n`).join('\n') + '*/\n';
const code = new TextDecoder().decode(result.outputFiles[0].contents);
if (/<\/script/i.test(code)) throw new Error('the bundle contains "</script": it cannot be inlined in a page');
mkdirSync(out, {recursive: true});
writeFileSync(join(out, 'viewer.js'), header + code + licences);
const css = readFileSync(join(here, 'src', 'style.css'), 'utf8');
writeFileSync(join(out, 'viewer.css'), css);
console.log(`wrote ${join(out, 'viewer.js')} (${list.map((p) => p.name + ' ' + p.version).join(', ')})`);
