use super::*;

/// A plain board: what the simulator keeps, in miniature.
#[derive(Default)]
struct Board {
    counts: Vec<u64>,
    owners: Vec<usize>,
    updates: Vec<u64>,
    sets: Vec<Vec<usize>>,
    log: Vec<String>,
}

impl View for Board {
    fn subdomains(&self) -> usize {
        self.counts.len()
    }
    fn count(&self, s: usize) -> u64 {
        self.counts[s]
    }
    fn owner(&self, s: usize) -> usize {
        self.owners[s]
    }
    fn threads(&self) -> usize {
        self.updates.len()
    }
    fn thread_updates(&self, t: usize) -> u64 {
        self.updates[t]
    }
}

impl Sets for Board {
    fn set_owner(&mut self, s: usize, to: usize) {
        self.owners[s] = to;
        self.log.push(format!("owner {s}->{to}"));
    }
    fn remove(&mut self, t: usize, s: usize) {
        self.sets[t].retain(|&x| x != s);
        self.log.push(format!("remove {s} from {t}"));
    }
    fn add(&mut self, t: usize, s: usize) {
        self.sets[t].push(s);
        self.log.push(format!("add {s} to {t}"));
    }
    fn changed(&mut self, t: usize) {
        self.log.push(format!("changed {t}"));
    }
    fn crossed_sockets(&mut self, s: usize) {
        self.log.push(format!("crossed {s}"));
    }
}

#[derive(Debug)]
struct MoveFirstOfThread0;
impl Policy for MoveFirstOfThread0 {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        let sub = snap.owners.iter().position(|&o| o == 0);
        sub.map(|sub| Move {
            sub,
            from: 0,
            to: 1,
        })
        .into_iter()
        .collect()
    }
    fn name(&self) -> crate::policy::Named {
        "joint".parse().unwrap()
    }
}

#[test]
fn a_move_writes_the_owner_before_the_sets_and_tells_both_threads() {
    let mut b = Board {
        counts: vec![0; 2],
        owners: vec![0, 1],
        updates: vec![0, 0],
        sets: vec![vec![0], vec![1]],
        ..Board::default()
    };
    let mut c = Caller::of(Arc::new(MoveFirstOfThread0));
    let moves = c.decide(&b, &[0, 1], 1.0);
    c.apply(&moves, &[0, 1], &mut b);
    assert_eq!(
        b.log,
        [
            "owner 0->1",
            "remove 0 from 0",
            "add 0 to 1",
            "changed 0",
            "changed 1",
            "crossed 0"
        ]
    );
    assert_eq!(b.sets, [vec![], vec![1, 0]]);
    assert_eq!(
        (
            c.stats().calls,
            c.stats().moves,
            c.stats().cross_socket_moves
        ),
        (1, 1, 1)
    );
}

/// What the policy saw: progress, rates and the time since the last call.
type Seen = (Vec<u64>, Vec<f64>, f64);

#[derive(Debug)]
struct Records(std::sync::Mutex<Vec<Seen>>);
impl Policy for Records {
    fn decide(&self, snap: &Snapshot<'_>) -> Vec<Move> {
        let seen = (
            snap.progress.to_vec(),
            snap.rates.to_vec(),
            snap.since_last_s,
        );
        self.0.lock().unwrap().push(seen);
        Vec::new()
    }
    fn name(&self) -> crate::policy::Named {
        "joint".parse().unwrap()
    }
}

#[test]
fn the_policy_sees_each_threads_updates_and_rate_since_the_previous_call() {
    let rec = Arc::new(Records(Default::default()));
    let mut c = Caller::of(rec.clone());
    let mut b = Board {
        counts: vec![0; 2],
        owners: vec![0, 1],
        updates: vec![5, 3],
        sets: vec![vec![0], vec![1]],
        ..Board::default()
    };
    c.decide(&b, &[0, 0], 0.5);
    b.updates = vec![9, 10];
    c.decide(&b, &[0, 0], 2.5);
    let seen = rec.0.lock().unwrap();
    assert_eq!(seen[0], (vec![5, 3], vec![10.0, 6.0], 0.5));
    assert_eq!(seen[1], (vec![4, 7], vec![2.0, 3.5], 2.0));
}

#[test]
fn each_interval_of_the_effort_counts_the_moves_of_the_call_that_began_it() {
    let mut b = Board {
        counts: vec![0; 3],
        owners: vec![0, 0, 1],
        updates: vec![0, 0],
        sets: vec![vec![0, 1], vec![2]],
        ..Board::default()
    };
    let mut c = Caller::of(Arc::new(MoveFirstOfThread0));
    // Calls at 1, 2, 3 and 4 s: the first two move one subdomain each, the
    // last two find nothing left on thread 0.
    for (k, now) in [1.0, 2.0, 3.0, 4.0].into_iter().enumerate() {
        b.updates = vec![k as u64 * 10 + 10, k as u64 * 10 + 10];
        let moves = c.decide(&b, &[0, 0], now);
        c.apply(&moves, &[0, 0], &mut b);
    }
    let stats = c.stats();
    let moves: Vec<(f64, u64)> = stats.effort.iter().map(|e| (e.t_s, e.moves)).collect();
    // The interval from 0 s began with no call; those from 1 and 2 s with
    // the calls that moved; that from 3 s with one that did not.
    assert_eq!(moves, [(0.0, 0), (1.0, 1), (2.0, 1), (3.0, 0)]);
    assert_eq!(stats.moves, 2);
}
