package archcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const registerPkg = "github.com/apache/beam/sdks/v2/go/pkg/beam/register"

// TestNoGenericDoFnRegistration: structural DoFns and CombineFns (tests'
// too: they compile into every test binary) are
// registered with beam.RegisterDoFn, not with the generic register.DoFnNxM
// and register.CombinerN. Each generic registration instantiates Beam's
// StartBundle and FinishBundle wrapper builders (about 800 lines each, over
// ten type parameters) for its own types: with some 60 DoFns, compiling the
// three stage packages took about 11 CPU-minutes and 7 GB in one compiler
// process, and the relabel binary was 500 MB. beam.RegisterDoFn registers
// the same types by reflection; ProcessElement is then called through
// reflect, which costs nothing measurable here since every DoFn takes a
// batch of rows (a Block, Rows or BatchItems) per call. register.EmitterN,
// register.IterN and register.FunctionNxM stay: they are small generics and
// make the per-element emits and iterations fast.
func TestNoGenericDoFnRegistration(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		name := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == registerPkg {
				name = "register"
				if imp.Name != nil {
					name = imp.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		if f, err = parser.ParseFile(fset, path, nil, 0); err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name &&
				(strings.HasPrefix(sel.Sel.Name, "DoFn") || strings.HasPrefix(sel.Sel.Name, "Combiner")) {
				t.Errorf("%s: %s.%s: register DoFns and CombineFns with beam.RegisterDoFn (see this test's comment)", fset.Position(sel.Pos()), name, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
