package crowd

import (
	"math"
	"testing"
)

// testCrowd is 20 annotators of the four kinds.
func testCrowd() []SimAnnotator {
	var ann []SimAnnotator
	for _, acc := range []float64{.9, .85, .8, .75, .7, .9, .8, .7} {
		ann = append(ann, SimAnnotator{Expert, acc})
	}
	for _, acc := range []float64{.75, .7, .65, .6, .55, .7} {
		ann = append(ann, SimAnnotator{Confuser, acc})
	}
	for range 3 {
		ann = append(ann, SimAnnotator{Spammer, 0})
	}
	for range 3 {
		ann = append(ann, SimAnnotator{Adversary, .7})
	}
	return ann
}

// oracle is the accuracy of the posterior under the true matrices and the
// uniform class prior: the best any estimate of the matrices can do.
func oracle(cr *Crowd, C int) float64 {
	correct := 0
	post := make([]float64, C)
	for i := 0; i < cr.Items.Len(); i++ {
		for c := range post {
			post[c] = 1
		}
		ann, lab := cr.Items.Item(i)
		for k, a := range ann {
			for c := range post {
				post[c] *= cr.Matrix[a][c*C+int(lab[k])]
			}
		}
		if argmax(post) == int(cr.Truth[i]) {
			correct++
		}
	}
	return float64(correct) / float64(len(cr.Truth))
}

func argmax(x []float64) int {
	best := 0
	for c, v := range x {
		if v > x[best] {
			best = c
		}
	}
	return best
}

func accuracy(post []float64, truth []int32, C int) float64 {
	correct := 0
	for i, t := range truth {
		if argmax(post[i*C:(i+1)*C]) == int(t) {
			correct++
		}
	}
	return float64(correct) / float64(len(truth))
}

func TestRecoverExplore(t *testing.T) {
	const n, C = 4000, 5
	ann := testCrowd()
	cr := Simulate(n, C, 5, ann, 1)
	res, err := Fit(&cr.Items, nil, Params{C: C})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("oracle %.4f fit %.4f", oracle(cr, C), accuracy(res.Posterior, cr.Truth, C))
	for a, s := range res.Model.Summarise(Params{}) {
		est := res.Model.Matrix(int64(a))
		var worst float64
		for k := range est {
			worst = max(worst, math.Abs(est[k]-cr.Matrix[a][k]))
		}
		t.Logf("%d %v %.2f: given %d acc %.3f lift %.3f mis %.3f spam %v adv %v maxerr %.3f", a, ann[a].Kind, ann[a].Acc, s.Given, s.Accuracy, s.Lift, s.Misdirected, s.Spammer, s.Adversary, worst)
	}
}
