package postgres

// CheckVersion exposes checkVersion to the external tests.
var CheckVersion = checkVersion
