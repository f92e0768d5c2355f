module github.com/dplr/dplr/beam

go 1.26.8

require github.com/dplr/dplr v0.0.0

require github.com/apache/beam/sdks/v2 v2.77.0 // indirect

replace github.com/dplr/dplr => ../
