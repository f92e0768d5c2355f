package host

// Version is the plugin's version, from its catalogue.
func (p *Plugin) Version() string { return p.Catalogue.Version }

// Threads is the number of threads the plugin's linear-algebra backend may
// use.
func (p *Plugin) Threads() int { return p.Catalogue.BackendThreads }
