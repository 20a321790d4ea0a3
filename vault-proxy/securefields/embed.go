// Package securefields holds the secure card fields' browser package as
// built (dist/, from the TypeScript sources beside this file by `npm run
// build`): the merchant-side loader and the field page each iframe loads,
// which vault-proxy serves from its public listener. The build output is
// committed so that a clean clone builds and tests with Go alone; make
// test checks it is what the sources build (docs/secure-fields.md).
package securefields

import "embed"

// Dist is the built package: securefields.js (the loader), field.html,
// field.js, field.css, icons/*.svg and integrity.json.
//
//go:embed dist
var Dist embed.FS
