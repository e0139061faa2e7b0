// Package docs holds ax's documentation beyond the README: the reference
// pages of the agent, tasks, execution, the HTTP API, security, alerts and
// operations, and the lab notes (performance, design, chaos suite,
// testing). It has no Go code; its tests check that every relative link
// of the repository's Markdown files (README.md, docs/*.md, the packages'
// DESIGN.md) names a file of the repository, and every #anchor a heading
// of the file it points into, so that links cannot rot unnoticed; and
// that the code keeps the shape design.md describes (TestShape: the
// layers, and bounds on package and type size).
package docs
