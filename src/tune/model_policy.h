#pragma once
// The model-based tuner of AutoTVM (Chen et al., "Learning to Optimize Tensor Programs",
// NeurIPS 2018): an XGBoost ranking model of the measured configurations, refitted every
// plan_size new measurements, and simulated annealing on its scores to choose what to measure
// next.
//
// Each round: labels are throughputs normalised within the task (failures, including
// configurations the space or the compiler rejected, at 0), one query group; the model is
// refitted from scratch (with a transfer model, on top of its weighted scores as base margin),
// or, with `warm_trees`, continued: each booster gets warm_trees more trees fitted on all the
// records (ensemble members on a new bootstrap resample) until the records have grown by
// `refit_growth` since the last fit from scratch;
// annealing (chains persisting between rounds) collects the plan_size best-scored valid
// configurations not yet measured or proposed; a batch takes them in order, except that each
// slot is, with probability epsilon, a uniformly random unmeasured configuration instead.
// Before there is anything to fit (no measurement with a positive throughput), proposals are
// random, or annealed on the transfer model alone when there is one.
//
// With `diversity`, the plan is picked greedily from three times as many annealed candidates,
// each adding its normalised rank score plus the share of knob values it brings that the
// plan does not hold yet (after AutoTVM's submodular pick).
//
// Acquisition. `mean` (AutoTVM's) anneals on one model's scores. `ucb` (the default) and
// `thompson` fit an ensemble of `ensemble` boosters instead, each on a bootstrap resample of
// the measured records (n rows drawn with replacement, its own XGBoost seed), and standardise
// each member's scores by their mean and deviation over the measured records (rank scores
// have no common scale). `ucb` anneals on mean + kappa * std of the members' standardised
// scores (an upper confidence bound, as in GP-UCB, Srinivas et al., ICML 2010, with the
// bootstrap spread standing in for the posterior's); `thompson` anneals once per member and
// fills each plan slot with the best not yet taken of a member drawn at random (Thompson
// sampling over a bootstrap ensemble, as in Osband et al., "Deep Exploration via Bootstrapped
// DQN", NeurIPS 2016). Diversity applies to mean and ucb only.
//
// Early trials. Without a transfer model the first `initial_design` proposals are a
// space-filling design: a Latin hypercube over the knobs' entity positions (each knob's
// range cut into as many strata as points, one point a stratum), each point moved to the
// nearest valid unvisited configuration of a pool of random valid ones; or (`balanced`) picked
// from that pool one by one, each the configuration whose knob values the design holds least
// often relative to their frequency in the pool. Rounds are small while few records exist: a
// refit after every clamp(round_fraction n, min_batch, plan_size) new measurements, n being
// the records at the last fit, and propose() returns no more than what is left of the
// current round.
//
// Adaptive exploration (ucb). With `adaptive_kappa`, the weight of the spread is
// kappa * clamp(2 (1 - agreement), 0.5, 1) * min(1, 4 * budget left / budget): agreement is
// the mean pairwise Pearson correlation of the members' scores over a random sample of 256
// unvisited configurations (members that agree on the ranking of what is unmeasured leave
// less to explore); the budget factor is 1 until the last quarter of the budget, then falls
// to 0 (exploring pays only while there is budget to exploit it), and 1 when the budget is
// unknown (set_budget).
//
// Local search. After each refit a `local_share` of the plan is the best of all valid,
// unvisited configurations one or two knob changes away from the centres: the `local_top`
// best measured and every other one within 3% of the best (a plateau), at most 8 * local_top.
// They are ranked by the acquisition plus the share of centres within two changes of each
// (a candidate surrounded by the best measured), so that a configuration two changes from the
// best plateau gets measured even where annealing on the acquisition wanders off.
//
// A smaller first batch. Without a design or transfer model, the first `first_batch`
// proposals are random and the first fit follows them, instead of one random
// batch of the caller's size; `round_fraction` is the share of the records a round adds (0.125,
// the default: rounds of clamp(n / 8, min_batch, plan_size)).
//
// A first batch toward the bounds. With `bound_bias` > 0 and no transfer model, each random
// proposal before the first fit sets every choice knob, with probability bound_bias, to its
// smallest or largest value (half each) and otherwise to a uniform one (split and boolean knobs
// uniform); drawn again while invalid or measured, up to 1,000 times, then uniform. Fast kernels
// often sit where a knob can go no further (the largest tile, no shared memory, the most
// unrolling): on the 23 replayed caches the optimum holds a knob's smallest or largest value
// for 65 of the 116 knobs with three or more values, where uniform placement expects 46. A
// first fit that has seen such corners does not take a search to them only by chance.
//
// Trust region around the incumbent. With `incumbent_share` > 0, after each fit a share of the
// round is the untried valid configurations one knob change from the incumbent (the best
// measured; exact ties all count), then, when those run out, two changes away, each radius in
// the order of the acquisition (a trust region of radius 1, then 2, around the best, as in
// greedy iterated local search, but ranked by the model). The share doubles for every fit at
// which the best has not improved since the last one, up to `incumbent_max_share`, and falls
// back when it improves: a stalled search spends more of each round next to its best, so that
// a better configuration one or two changes away is measured within a bounded number of
// rounds even when the model ranks it low. With `incumbent_adjacent` (off), each radius takes
// first the candidates whose changes all move a knob to a neighbouring value (one entity
// position up or down: the next tile size, one more stage), as the "adjacent" neighbours of
// Kernel Tuner's local searches, then the others. With `incumbent_widen` (off), a stalled
// trust region also widens: at least half of its share comes from radius 2 while radius 1
// still has untried configurations (a plateau of ties around the best has many of those).
// With `incumbent_random` > 0 (off), that share of the trust region's picks in each round
// (rounded, at least one when it has two slots or more) is drawn uniformly at random, from
// the policy's seeded generator, among the same candidates (radius 1, radius 2 once radius 1
// is exhausted; on a plateau both radii together) instead of taken in acquisition order; the
// rest stays ranked. Neighbours the model ranks last (a corner of a knob that is usually far
// slower) get measured at the rate of a model-free local search.
//
// A covering start. With `cover_start`, the random first batch is instead picked from a pool
// of random valid configurations so that it holds each knob's values as evenly as it can (a
// value not yet held first), unlike the Latin hypercube, which stratifies entity positions and
// then moves each point to a valid neighbour. With `cover_share` < 1 only that share of the
// batch is picked so; the rest are the pool's other members in the order drawn (plain random).
//
// Random slots early on. With `random_total` > 0, the model's first rounds keep part of the
// start's exploration: up to half of each round is uniformly random until random_total random
// proposals (the first batch included) were made, so that a small first batch brings the first
// fit sooner without cutting how much of the space is sampled blindly by the first ~50 trials.
//
// Ties. When the best measured throughput is shared exactly by several configurations (a
// plateau: the model gives them one label and cannot rank next to them), the trust region is
// centred on all of them (at most `incumbent_centres`, the first measured first), takes at
// least `plateau_share` of the round, and with `incumbent_support` ranks its one- and
// two-change candidates together by how many of the ties lie within two knob changes of
// each (a configuration surrounded by the plateau first), then by the acquisition. With a
// single incumbent none of this applies.
//
// Credit. With `credit_top` > 0, each measured configuration the trust region or the model's
// annealing proposed counts as a hit for its source when its throughput is within the best
// `credit_top` share of the records measured before it (a top-10% landing at 0.1); picks and
// hits decay by `credit_decay` at each plan. The trust region's base share w then becomes
// w p_t / (w p_t + (1 - w) p_m), p being each source's hit rate (Laplace: (hits + 1) /
// (picks + 2)), at most `credit_max`: equal rates leave w, and a space whose neighbours of the
// best keep paying (a smooth one) moves slots from the model to the trust region, one where
// the model's picks do better moves them back. The stall doubling and the plateau share act
// on top.
//
// Restarts. With `restart_share` > 0 (off), once the incumbent (a single best, no ties) has no
// untried valid one-knob neighbour left, it is a local optimum of the space, and that share of
// the trust region's slots (at least one; the rest stay at radius 2 of the incumbent) goes to
// a restart chain: a uniformly random valid configuration,
// then the untried one-knob neighbours of the chain's best measured member, by the
// acquisition; when that best has none left, the chain is a local optimum too and a new one
// starts (basin hopping, Wales and Doye 1997, with the model ranking each step). A chain that
// beats the incumbent makes its best the incumbent.
//
// A second basin. With `basin_share` > 0, once the best has not improved for `basin_stall`
// plans, that share of the trust region's slots (at least one; one stays with the incumbent)
// climbs in another basin: its centre is the best measured configuration that is not tied
// with the best, has no better measured configuration within two knob changes (a local best
// of what is measured) and still has untried valid one-change neighbours; the slots take
// those neighbours, best acquisition first. As the climb measures better neighbours the
// centre moves to them; once its neighbours are all tried the next such local best takes
// over. A search that settled in a basin of near-optima (a second shape of tile, 0.97 of the
// optimum) keeps climbing from the best point it has measured of another, where the trust
// region around the incumbent and annealing on a model fitted mostly to that basin do not go
// (Kernel Tuner's basin hopping and iterated local searches climb from several starts).
// "Improved" means by `basin_gain` (a share of the best) since the last plan that counted as
// progress: on a plateau the trust region finds a slightly better neighbour now and then (the
// best creeping up by a fraction of a percent from one near-tie to the next), and a count reset
// by any gain would never reach basin_stall.
//
// A Gaussian process for the first trials. With `gp_until` > 0 and no transfer model, each fit
// on fewer records than that also fits a Gaussian process (Matern 5/2, a length scale per knob) to
// the throughputs relative to the best (failures at the least measured one), each configuration a
// point of the unit cube (knob k at entity / (cardinality - 1)); until the records reach
// gp_until, the acquisition everything ranks by (annealing, trust region, restarts) is its
// mean + gp_kappa * sd, in the targets' standardised units. Trees fitted to a few dozen
// records rank little beyond the values they split on; a smooth prior over the positions
// interpolates between them.
//
// Coverage. With `coverage_share` > 0 (off), after each fit that share of the round goes to
// knob values no measured configuration holds yet: for each, the incumbent with that value
// (or, where that is invalid or tried, with one more knob changed), best acquisition first.

#include <algorithm>
#include <memory>
#include <random>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "cost_model/features.h"
#include "cost_model/gaussian_process.h"
#include "cost_model/rank_model.h"
#include "src/tune/cascade.h"
#include "src/tune/feature_cache.h"
#include "src/tune/search_policy.h"
#include "src/tune/simulated_annealing.h"
#include "src/tune/transfer_model.h"

namespace cutune {

// The initial design's construction; see the header comment.
enum class DesignKind { latin_hypercube, balanced };

// How the annealer scores a configuration; see the header comment.
enum class Acquisition { mean, ucb, thompson };

std::string_view to_string(Acquisition a);
// Throws std::invalid_argument (one line) on an unknown name.
Acquisition parse_acquisition(std::string_view name);

struct ModelPolicyOptions {
  int plan_size = 64;  // refit after this many new measurements
  AnnealingOptions annealing;
  double epsilon = 0.05;
  bool diversity = false;
  cost_model::RankModelOptions model;  // objective: pairwise (default) or regression
  Acquisition acquisition = Acquisition::ucb;
  int ensemble = 5;    // ucb, thompson: boosters, each on a bootstrap resample
  double kappa = 1.0;  // ucb: weight of the members' spread (the most, when adaptive)
  // The default (bench/README.md section 7): a first batch toward the bounds (bound_bias,
  // below; since the twenty-fifth session), a second basin (basin_share, below; since the
  // twenty-fourth session), a Gaussian process ranks until 64 records
  // (gp_until; since the twenty-second session), a random first batch of 8 (first_batch; 16
  // before the twenty-third session: with the process ranking from the first fit, over 60 seeds
  // 2,054 trials to 95% in sum over the 12 shared caches against 2,143 and 1,720.5 over the 10
  // held-out ones against 1,871, fewer on each of the six seed sets; 5 and 12 were behind), then
  // rounds of clamp(n / 8, 2, plan_size) (round_fraction, min_batch), the trust region around
  // the incumbent with half of each round (up to three quarters while the best stalls or is
  // tied, centred on every tie), kappa 1 fixed. Rounds of an eighth of the records from 2 and
  // kappa 1 (before: a quarter from 4, kappa 3) refit after every 2-3 trials early on and
  // rank by the members' mean more than their spread: over 40 seeds 1,500 trials to 95% in
  // sum over 12 caches against 1,591 (1,100 against 1,221 without the coin-flip cm W6600),
  // ahead at 50 trials on both seed sets, the needle within its bar. Rounds from 4 with half
  // of them next to the best (before: from 8, a quarter, up to half) had beaten 1,620; rounds
  // of a quarter of the records rather than half, 1,765.5. The Latin-hypercube start
  // (initial_design 32) and the covering start (cover_start) won on some caches and lost on
  // others; they are off. `previous()` gives the default before the plateau handling and the
  // small first batch, `classic()` the former default (one random first batch, rounds of
  // plan_size, no trust region); `early()` the first attempt.
  bool adaptive_kappa = false;  // ucb: scale kappa by disagreement and budget left
  int initial_design = 0;       // space-filling proposals before the first fit (no transfer)
  DesignKind design = DesignKind::latin_hypercube;
  int min_batch = 2;              // smallest round while few records exist (>= plan_size: off)
  double local_share = 0;         // of each plan: 1-/2-knob neighbours of the best measured
  int local_top = 3;              // how many of the best measured configurations to search around
  double incumbent_share = 0.5;   // of each round: untried 1-, then 2-knob neighbours of the best
  double incumbent_max_share = 0.75;  // the most it grows to while the best does not improve
  int first_batch = 8;               // random proposals before the first fit (0: the whole batch)
  double round_fraction = 0.125;     // a round is clamp(round_fraction * n, min_batch, plan_size)
  bool incumbent_by_mean = false;    // trust region ranked by the members' mean, not the ucb
  bool incumbent_widen = false;      // while the best stalls, half the trust region from radius 2
  bool incumbent_adjacent = false;   // each radius: adjacent values (one position away) first
  // This share of each radius's picks (0: off) in turns over the sets of knobs changed: every
  // set's best by the acquisition, then every set's second, ... (so that one many-valued knob
  // does not fill the trust region); the others in acquisition order, interleaved.
  double incumbent_stratify = 0;
  // Of the trust region's picks, this share (in [0, 1]; 0: off) uniformly random among its
  // candidates instead of in acquisition order (bench/README.md section 7, "Random picks").
  double incumbent_random = 0;
  // The random first batch (first_batch, else the caller's batch) drawn to cover every knob's
  // values: see covering_start().
  bool cover_start = false;
  double cover_share = 1.0;  // of that batch; the rest plain random draws
  // Random proposals in all before the model has every slot (0: off): the first batch, then up
  // to half of each round, random, until this many (see random_slots()).
  int random_total = 0;
  int budget = 0;                    // trials of the whole run, if known (set_budget overrides)
  // Plateaus: see "Ties" in the header comment (bench/README.md section 7).
  int incumbent_centres = 64;     // most tied incumbents the trust region is centred on
  bool incumbent_support = true;  // on ties: rank by ties within two changes, then acquisition
  double plateau_share = 0.75;    // the trust region's least share while the best is tied
  // Ties within this share of the best throughput (relative; 0: exact ties only). Measured
  // times carry noise, so configurations within it of the best are a plateau as well.
  double tie_tolerance = 0;
  double coverage_share = 0;      // of each round: knob values not yet measured ("Coverage")
  // Recombination (0: off): this share of each round from crossings of the incumbent with the
  // best measured configuration of each knob value (values taken from both, every mix of the
  // knobs they differ in), best acquisition first, once the best has not improved for
  // recombine_stall plans: a value that is only good together with another, far from the
  // incumbent, comes back with it (bench/README.md section 7, "Recombination").
  double recombine_share = 0;
  int recombine_stall = 2;
  // A Gaussian process for the first trials (0: off): while the records number fewer than
  // gp_until, the acquisition is the upper bound mean + gp_kappa * sd of a Gaussian process over
  // the knobs' positions (cost_model/gaussian_process.h) instead of the ensemble's; see "A
  // Gaussian process for the first trials" in the header comment. bench/README.md section 7:
  // until 64 records with kappa 2, over 60 seeds, 1,871 trials to 95% in sum over the 10
  // held-out caches against 1,978, 2,143 against 2,149.5 over the 12 shared ones (per-cache
  // geometric means 0.84-0.92 and 0.94-0.98 of the default before it); kappa 1, 0 and a
  // process until 40 or 96 records were behind.
  int gp_until = 64;
  double gp_kappa = 2.0;
  // Restarts (0: off): once the incumbent is a certified local optimum (every valid one-knob
  // neighbour measured, none better, no tie), this share of the trust region's slots climbs
  // from a random restart instead of radius 2 ("Restarts" in the header comment).
  double restart_share = 0;
  // A second basin (0: off): once the best has not improved for basin_stall plans, this share
  // of the trust region's slots climbs from the best measured configuration that no better
  // measured one lies within two knob changes of (a local best of another basin) and that has
  // untried one-change neighbours: its neighbours, best acquisition first ("A second basin" in
  // the header comment). Default since the twenty-fourth session (bench/README.md section 7,
  // "A second basin"): half of the trust region after 4 plans without a better best; over 60
  // seeds 1,960.5 trials to 95% in sum over the 12 shared caches against 2,054 and 1,706.5
  // over the 10 held-out ones against 1,720.5; cm W6600's corner found on 28 of 60 seeds
  // against 13, co RTX 3060 at 0.992-0.998 of the optimum by 100 trials against 0.974. A
  // quarter, or after 3 plans, did less on the held-out caches.
  double basin_share = 0.5;
  int basin_stall = 4;
  // The least relative gain of the best that counts as progress for basin_stall (0: any
  // gain; the trust region's own stall count, incumbent_share's doubling, counts any gain).
  // Default since the thirty-second session (bench/README.md section 7, "A second basin
  // after a creeping best"): 0.02.
  double basin_gain = 0.02;
  // A first batch toward the bounds (0: uniform; "A first batch toward the bounds" in the
  // header comment). Default since the twenty-fifth session (bench/README.md section 7):
  // 0.5; over 100 seeds the per-seed geometric mean of the trials to 95% 0.857 of the
  // uniform first batch's over the 12 shared caches and 0.911 over the 10 held-out ones
  // (below 1 on each of the five seed sets of both); 0.25 and 0.33, and half of the batch at
  // 0.5 or 1, did less.
  double bound_bias = 0.5;
  // Credit (off: 0): the trust region's base share weighted by how often its picks, against
  // the model's, landed in the best `credit_top` of the records ("Credit" in the header).
  double credit_top = 0;
  double credit_decay = 0.75;  // of the counts at each plan (recent rounds weigh more)
  double credit_max = 0.75;    // the most the credited share grows to
  // Warm start (0: off): trees added to each booster at a refit instead of fitting anew, while
  // the records number less than (1 + refit_growth) times those of the last fit from scratch
  // (bench/README.md section 7: 15 of the fit's 150 trees cost a tenth of a fit and leave
  // the replay figures unchanged).
  int warm_trees = 15;
  double refit_growth = 0.5;
  // A fit from scratch of the ensemble on at least this many records (0: never) spans
  // split_refit_parts rounds: it grows a share of each member's trees (rounded up), and each
  // of the next refits, which are then warm ones, a share of the rest instead of its
  // warm_trees, so that no round pays for a whole fit from scratch (with IR features on
  // 1,000 records the five boosters' 50 trees are about half of a round). The cascade's
  // surrogate is split with it. Only where the next refits are sure to be warm (refit_growth
  // times the records exceed parts - 1 rounds of plan_size); needs warm_trees > 0; the single
  // model of the mean acquisition always fits whole. bench/README.md section 7: splitting every
  // fit from scratch from 64 records on searched no worse on both synthetic objectives over 48
  // seeds, in two parts (fourteenth session) and in three or four (twenty-eighth session:
  // the same medians at every budget; with four the IR round at 1,000 records, median of 9,
  // 0.41 s cold and 0.34-0.39 s after it, against 0.49 and 0.36-0.43 with two). Four parts
  // of the IR model's 50 trees grow 13, 13, 12 and 12, fewer than a warm refit's 15.
  int split_refit_from = 512;
  int split_refit_parts = 4;  // the rounds a split fit from scratch spans (at least 2)
  // A refit that would take a booster past this many times its trees at a fit from scratch
  // fits from scratch instead (0: no cap; IR features: 200 trees, knob features 600): a warm
  // fit costs in proportion to the records times the trees, so without a cap the rounds of a
  // long run grow until the records have grown by refit_growth (IR features, 2,300 -> 3,400
  // records: 0.44 -> 0.78 s a round).
  double max_tree_growth = 4.0;
  // Cascade (src/tune/cascade.h; survivors 0: off; by default on, K = 1000, for IR features
  // only): the annealing scores its steps with a knob-feature surrogate fitted on the same
  // records, and the plan is the best of its `survivors` best by this model's acquisition
  // (mean and ucb; not thompson). bench/README.md section 7: the warm IR round 1.8 s -> 0.4 s,
  // no worse on two synthetic objectives.
  CascadeOptions cascade;
  // IR features (a schema "ir/..."): this model's boosters get at most ir_rounds trees of
  // depth at most ir_max_depth (0: no cap; the cascade's surrogate has its own depth,
  // CascadeOptions::max_depth).
  // bench/README.md section 7, "A lighter IR model": a fit from scratch of 5 x 150 trees of
  // depth 6 on 1,000 records cost 1.7 s of the 2.2 s cold round; 50 of depth 4 cost 0.37 s
  // and searched no worse on both synthetic objectives over 16 seeds (better on the IR
  // roofline one).
  int ir_rounds = 50;
  int ir_max_depth = 4;
  std::shared_ptr<const TransferModel> transfer;

  // These options with every early-trial and local-search change of the first attempt on: a
  // Latin-hypercube design of 32, rounds from 8, adaptive kappa, 1/8 of each plan from the
  // local search, no trust region.
  ModelPolicyOptions early() const {
    ModelPolicyOptions o = *this;
    o.basin_share = 0;
    o.bound_bias = 0;
    o.adaptive_kappa = true;
    o.kappa = 3.0;
    o.initial_design = 32;
    o.min_batch = 8;
    o.local_share = 0.125;
    o.incumbent_share = 0;
    o.first_batch = 0;
    o.round_fraction = 0.5;
    o.incumbent_widen = false;
    o.gp_until = 0;
    return o;
  }
  // The default of issue 11's second round: one random first batch of plan_size, rounds of
  // clamp(n / 2, 8, plan_size), the trust region exhausting radius 1 before radius 2, no
  // plateau handling.
  ModelPolicyOptions previous() const {
    ModelPolicyOptions o = without_plateaus();
    o.basin_share = 0;
    o.bound_bias = 0;
    o.kappa = 3.0;
    o.first_batch = 0;
    o.round_fraction = 0.5;
    o.min_batch = 8;
    o.incumbent_share = 0.25;
    o.incumbent_max_share = 0.5;
    o.incumbent_widen = false;
    o.gp_until = 0;
    return o;
  }
  // The default before the plateau handling (bench/README.md section 7, "Plateaus"): at most
  // four tied centres, the first measured, rings ranked by the acquisition alone.
  ModelPolicyOptions without_plateaus() const {
    ModelPolicyOptions o = *this;
    o.incumbent_centres = 4;
    o.incumbent_support = false;
    o.plateau_share = 0;
    return o;
  }
  // The former default (before issue 11): one random first batch of plan_size, every round
  // plan_size, no design, trust region or local search, every fit from scratch.
  ModelPolicyOptions classic() const {
    ModelPolicyOptions o = without_plateaus();
    o.basin_share = 0;
    o.bound_bias = 0;
    o.adaptive_kappa = false;
    o.kappa = 3.0;
    o.initial_design = 0;
    o.min_batch = 1 << 20;
    o.local_share = 0;
    o.incumbent_share = 0;
    o.warm_trees = 0;
    o.first_batch = 0;
    o.round_fraction = 0.5;
    o.incumbent_widen = false;
    o.gp_until = 0;
    return o;
  }
};

class ModelPolicy : public SearchPolicy {
 public:
  // The space and the extractor must outlive the policy.
  ModelPolicy(const ConfigSpace& space, const cost_model::FeatureExtractor& features,
              ModelPolicyOptions options);

  void reset(uint64_t seed) override;
  std::vector<Config> propose(int batch) override;
  void observe(const std::vector<Config>& configs,
               const std::vector<MeasureResult>& results) override;
  std::string name() const override { return "xgb"; }
  void set_budget(int trials) override { budget_ = trials; }
  // Raises the lower bound of the round size (clamp(round_fraction n, ..., plan_size)) from the
  // next refit on; the first random batch is unchanged.
  void set_min_round(int size) override { min_round_ = std::max(0, size); }

  // The current model's scores (with the transfer margin, if any); empty before the first fit
  // when there is no transfer model. With an ensemble: the acquisition (ucb: mean + kappa *
  // std of the standardised member scores; thompson: their mean).
  std::vector<float> predict(const std::vector<Config>& configs);
  // With an ensemble, each member's standardised scores: out[m][i] for configs[i]; empty
  // before the first fit or without an ensemble.
  std::vector<std::vector<float>> member_scores(const std::vector<Config>& configs);
  // Refits on everything observed and re-plans now (what propose does every plan_size).
  void refit_and_plan();

  int fits() const { return fits_; }
  int warm_fits() const { return warm_fits_; }  // of fits(), those that continued the boosters
  // Trees of each ensemble member (empty without an ensemble or before the first fit).
  std::vector<int> member_trees() const;
  // Trees a member of the last fit from scratch has still to grow (split_refit_from).
  int pending_trees() const { return pending_trees_; }
  // Trees of each member of the cascade's surrogate (empty without a cascade or a fit).
  std::vector<int> surrogate_trees() const;
  double last_kappa() const { return kappa_; }          // ucb weight of the last plan
  double last_agreement() const { return agreement_; }  // of the members, at the last fit
  int round_size() const { return round_size_; }        // proposals of the current round
  int stalled_fits() const { return stalled_; }         // fits since the best last improved
  // The trust region's share of the current round (0 when off or before the first fit).
  double incumbent_share() const { return incumbent_share_; }
  // Where the last refit_and_plan's time went (seconds of this thread's CPU): the records'
  // feature rows, the fit (all members, and the agreement), the cascade's surrogate fit, the
  // plan (trust region, annealing, survivors).
  struct RoundTimes {
    double features = 0, fit = 0, cascade = 0, plan = 0;
  };
  const RoundTimes& last_round_times() const { return round_times_; }
  // The options this model's boosters are fitted with (options.model, with the IR overrides
  // where the features are IR).
  const cost_model::RankModelOptions& model_options() const { return model_options_; }
  // The annealing's options as resolved (with a cascade, at most cascade.chains chains).
  const AnnealingOptions& annealing_options() const { return annealer_.options(); }
  int last_annealing_steps() const { return annealer_.last_steps(); }
  int last_annealing_change() const { return annealer_.last_change(); }
  // What the cascade's annealing handed to this model at the last plan, surrogate's best
  // first (empty without a cascade).
  const std::vector<Config>& last_survivors() const { return survivors_; }

 private:
  struct Member {
    cost_model::RankModel model;
    double mean = 0, scale = 1;  // of its scores over the measured records
  };

  bool ensemble() const { return options_.acquisition != Acquisition::mean; }
  bool trained() const { return ensemble() ? !members_.empty() : model_.trained(); }
  std::vector<float> transfer_margin(const std::vector<Config>& configs);
  // warm: boost the current members instead of fitting new ones.
  void fit_ensemble(const cost_model::FeatureMatrix& x, const std::vector<float>& labels,
                    const std::vector<float>& margin, bool warm);
  // Fills member_z_ for the configurations it lacks; returns each one's first float there.
  std::vector<size_t> member_rows(const std::vector<Config>& configs);
  std::vector<Config> plan_thompson();
  void plan();
  // The model's mean score (ensemble: mean of the standardised members; no spread).
  std::vector<float> exploit_score(const std::vector<Config>& configs);
  // Indices of the records, best throughput first (ties in the order measured).
  std::vector<size_t> records_best_first() const;
  std::vector<Config> local_candidates(int count, const std::unordered_set<uint64_t>& exclude);
  void measure_agreement();
  // Untried valid configurations one, then two knob changes from the incumbent(s), at most
  // `count`, each radius best acquisition first.
  std::vector<Config> incumbent_candidates(int count, const std::unordered_set<uint64_t>& exclude);
  // The valid one-knob-change neighbours of `centre` not in `exclude`, knob by knob.
  std::vector<Config> untried_ring(const Config& centre,
                                   const std::unordered_set<uint64_t>& exclude) const;
  // Up to `count` untried valid one-change neighbours of the second basin's centre (see
  // basin_share), best acquisition first; none when no measured configuration qualifies.
  std::vector<Config> basin_candidates(int count, const std::unordered_set<uint64_t>& exclude);
  // Of `picks` trust-region picks, how many are random (options_.incumbent_random).
  size_t random_picks(size_t picks) const;
  // Moves n uniformly random entries of idx[from..] (taken in index order) to idx[from..from+n),
  // drawing from rng_.
  void draw_tail(std::vector<size_t>& idx, size_t from, size_t n);
  // The least throughput tied with `best` (options_.tie_tolerance; exact ties by default).
  double tie_floor(double best) const {
    return best * (1 - std::max(1e-9, options_.tie_tolerance));
  }
  // Up to `count` configurations, each holding a knob value no measured configuration holds:
  // the incumbent with that value, or, where that is invalid or tried, the incumbent with
  // that value and one more knob changed, best acquisition first.
  std::vector<Config> coverage_candidates(int count, const std::unordered_set<uint64_t>& exclude);
  // The first `count` of `cands` by the acquisition (ties: by index).
  std::vector<Config> best_predicted(const std::vector<Config>& cands, int count);
  // Up to `count` untried valid crossings of the incumbent with other parents (recombine_share).
  std::vector<Config> recombine_candidates(int count, const std::unordered_set<uint64_t>& exclude);
  std::vector<Config> initial_design(int count);
  // `count` valid unvisited configurations from a pool of random ones, each the one adding the
  // most (knob, value) pairs the start does not hold yet, the first drawn first on ties (so
  // every knob's values appear once before any appears twice, as far as the pool allows).
  std::vector<Config> covering_start(int count);
  // With random_total: up to half of a round of `size`, uniformly random unvisited ones not in
  // `exclude`, while fewer than random_total random proposals were made.
  std::vector<Config> random_slots(int size, const std::unordered_set<uint64_t>& exclude);

  const ConfigSpace& space_;
  ModelPolicyOptions options_;
  cost_model::RankModelOptions model_options_;  // options_.model with the IR overrides
  RoundTimes round_times_;
  FeatureCache features_;
  SimulatedAnnealing annealer_;
  cost_model::RankModel model_;
  std::mt19937_64 rng_;
  uint64_t seed_ = 0;

  std::unordered_set<uint64_t> visited_;         // observed or proposed
  std::unordered_map<uint64_t, size_t> row_of_;  // observed index -> position below
  std::vector<Config> observed_;
  std::vector<double> throughput_;
  int new_since_fit_ = 0;
  int fits_ = 0;
  int warm_fits_ = 0;
  int full_fit_rows_ = 0;                             // records at the last fit from scratch
  int pending_trees_ = 0;    // of a split fit from scratch, grown at the next refits
  int pending_parts_ = 0;    // the refits they are spread over
  int cascade_pending_ = 0;  // the same for the cascade's surrogate (over the same parts)
  double margin_weight_ = 0;                          // w(n) of the current fit
  std::unordered_map<uint64_t, float> global_score_;  // transfer model, never changes
  std::unordered_map<uint64_t, float> score_;         // current model, cleared at each fit
  std::vector<Member> members_;                       // ensemble of the current fit
  std::unordered_map<uint64_t, size_t> member_row_;   // index -> first of its member scores
  std::vector<float> member_z_;                       // standardised, members_.size() a config
  std::vector<Config> plan_;                          // best first; consumed from the front
  size_t plan_next_ = 0;
  int budget_ = 0;
  int round_size_ = 0;  // refit after this many new measurements
  int min_round_ = 0;   // set_min_round
  int proposed_since_fit_ = 0;
  double kappa_ = 0;
  double agreement_ = 1;
  std::vector<Config> design_;  // initial design, consumed from the front
  double best_at_plan_ = 0;     // best throughput measured at the last plan
  int stalled_ = 0;             // plans since the best last improved
  double basin_reference_ = 0;  // the best when a plan last counted as progress for basin_gain
  int basin_stalled_ = 0;       // plans since then
  double incumbent_share_ = 0;  // of the current round
  size_t design_next_ = 0;
  int random_made_ = 0;  // random proposals so far (the first batch and random_slots)
  std::unique_ptr<KnobSurrogate> cascade_;  // null when options_.cascade is off
  // gp_until: the process of the current fit (trained only while it is the acquisition) and
  // its scores, cleared at each fit.
  cost_model::GaussianProcess gp_;
  std::unordered_map<uint64_t, float> gp_score_;
  void fit_gp(const std::vector<float>& labels);
  std::vector<double> unit_point(const std::vector<Config>& configs) const;
  // Credit: who proposed each configuration of the current plans (0 trust region, 1 model),
  // and each source's decayed picks and hits.
  std::unordered_map<uint64_t, int> origin_;
  double credit_picks_[2] = {0, 0}, credit_hits_[2] = {0, 0};
  std::vector<Config> survivors_;           // of the last plan
  // Restarts: the untried valid neighbours the incumbent had at the last plan (radius 1),
  // and the current restart chain (indices it proposed).
  size_t incumbent_ring_left_ = 0;
  std::unordered_set<uint64_t> chain_;
  std::vector<Config> restart_candidates(int count, const std::unordered_set<uint64_t>& exclude);
};

std::unique_ptr<SearchPolicy> make_model_policy(const ConfigSpace& space,
                                                const cost_model::FeatureExtractor& features,
                                                ModelPolicyOptions options = {});

}  // namespace cutune
