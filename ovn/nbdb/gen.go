package nbdb

//go:generate go tool -modfile=../../hack/tools/go.mod modelgen -extended -p nbdb -o . ovn-nb.ovsschema
