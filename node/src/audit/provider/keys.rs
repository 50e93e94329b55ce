//! Key delivery: each segment key sealed to the seats that read the segment (its own
//! seats, and the seats of the segments that cite it), under [`key_context`], in
//! `DeliverKeys` transactions of at most [`KEYS_PER_DELIVERY`] keys. A delivery is recorded
//! only once pooled, so one still queued in the outbox is asked again after a restart
//! ([`Provider::resume`]). A seat of an escalation round gets its keys again, and so does
//! a seat of each appeal round (the contract counts a key for the round whose commit
//! window it lands in).

use std::collections::BTreeMap;

use rand::RngCore;
use trust_contracts::Contract;
use trust_protocol::{
    AccountId, Hash, SealingPublicKey,
    block::MAX_TX_BYTES,
    seal::{key_context, seal_key},
    tx::{Call, MAX_SEALED_KEYS, SeatKey},
};

use super::Provider;
use crate::audit::outbox::Sent;

/// Most sealed keys in one `DeliverKeys`: a sealed key with its segment and seat takes
/// 122 bytes, so 512 of them stay well within a transaction ([`MAX_TX_BYTES`]) and
/// [`MAX_SEALED_KEYS`].
pub const KEYS_PER_DELIVERY: usize = 512;
const _: () =
    assert!(KEYS_PER_DELIVERY <= MAX_SEALED_KEYS && KEYS_PER_DELIVERY * 122 + 1024 <= MAX_TX_BYTES);

impl Provider {
    /// Whether this provider keeps `seat`'s keys from it (a griefing provider, in test
    /// builds only).
    fn withholds(&self, session: &Hash, seat: &AccountId) -> bool {
        #[cfg(feature = "misbehave")]
        if self.griefing {
            return super::grief::starves(session, seat);
        }
        let _ = (session, seat);
        false
    }

    /// The key `seat`'s keys are sealed to: its registered one, unless this provider
    /// seals them wrong on purpose (in test builds only).
    fn sealing_key_for(&self, seat: &AccountId, registered: SealingPublicKey) -> SealingPublicKey {
        #[cfg(feature = "misbehave")]
        if self.missealed.contains(seat) {
            let wrong = Hash::of_parts("trust/test/missealed", &[seat.as_ref()]);
            return trust_protocol::seal::SealingSecret::from_bytes(wrong.0).public();
        }
        let _ = seat;
        registered
    }

    pub(super) async fn deliver(
        &self,
        session: &Hash,
        seats: &[(u16, AccountId, u8)],
        contract: &Contract,
    ) {
        let Some(mut r) = self.load(session) else {
            return;
        };
        // (segment, seat) -> the latest round of a seat it is for: 0, 1 (an escalation)
        // or an appeal round.
        let mut wanted: BTreeMap<(u16, AccountId), u8> = BTreeMap::new();
        for (seg, seat, round) in seats {
            let deps = r
                .depends_on
                .get(usize::from(*seg))
                .cloned()
                .unwrap_or_default();
            for k in std::iter::once(*seg).chain(deps) {
                let e = wanted.entry((k, *seat)).or_insert(*round);
                *e = (*e).max(*round);
            }
        }
        let mut keys = Vec::new();
        // (segment, seat) -> the round it is sent for.
        let mut rounds: BTreeMap<(u16, AccountId), u8> = BTreeMap::new();
        for ((seg, seat), round) in wanted {
            let done = match round {
                0 => r.delivered.contains(&(seg, seat)),
                1 => r.delivered_again.contains(&(seg, seat)),
                a => r.delivered_appeal.contains(&(a, seg, seat)),
            };
            if done || self.withholds(session, &seat) {
                continue;
            }
            rounds.insert((seg, seat), round);
            let (Some(key), Some(id)) = (r.keys.get(usize::from(seg)), r.ids.get(usize::from(seg)))
            else {
                continue;
            };
            let Some(aud) = contract.state().auditors.get(&seat) else {
                continue;
            };
            let mut eph = [0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut eph);
            let to = self.sealing_key_for(&seat, aud.sealing_key);
            match seal_key(&to, key, eph, &key_context(session, id, &seat)) {
                Ok(sealed) => keys.push(SeatKey {
                    segment: seg,
                    seat,
                    sealed,
                }),
                Err(e) => {
                    tracing::warn!(%session, segment = seg, %seat, error = %e, "cannot seal a key to this seat")
                }
            }
        }
        // A long trace's session seats more (segment, seat) pairs than one transaction
        // carries: the keys go out in several `DeliverKeys`.
        while !keys.is_empty() {
            let rest = keys.split_off(keys.len().min(KEYS_PER_DELIVERY));
            let batch = std::mem::replace(&mut keys, rest);
            let pairs: Vec<(u16, AccountId)> = batch.iter().map(|k| (k.segment, k.seat)).collect();
            match self
                .outbox
                .send(Call::DeliverKeys {
                    session: *session,
                    keys: batch,
                })
                .await
            {
                Ok(tx) => {
                    // Recorded only once pooled: a delivery still queued in the outbox is
                    // in memory only, and `resume` must send it again after a restart.
                    if matches!(tx, Sent::Pooled(_)) {
                        for p in &pairs {
                            match rounds.get(p).copied().unwrap_or(0) {
                                0 => r.delivered.insert(*p),
                                1 => r.delivered_again.insert(*p),
                                a => r.delivered_appeal.insert((a, p.0, p.1)),
                            };
                        }
                        if let Err(e) = self.store(session, &r) {
                            tracing::error!(%session, error = %e, "provider record not saved");
                        }
                    }
                    tracing::info!(%session, %tx, keys = pairs.len(), "segment keys sealed to seats");
                }
                Err(e) => tracing::warn!(%session, error = %e, "DeliverKeys not sent"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use trust_contracts::Event;
    use trust_protocol::{
        Keypair,
        seal::{SegmentDoc, decrypt_segment, open_key},
        tx::Tier,
    };

    use super::*;
    use crate::audit::{
        provider::{
            honeypot,
            tests::{TRACE, keys_delivered, provider, seat_count},
        },
        testkit::{Chain, auditor, provider_key, sealing},
    };
    use crate::blobs::BlobStore;

    /// A session opened on 3 auditors whose round-0 keys went out: the provider, the chain,
    /// the provider's data, the session and a seat of segment 0.
    async fn keyed_in_round0() -> (
        crate::audit::provider::Provider,
        Chain,
        tempfile::TempDir,
        crate::audit::provider::Submitted,
        trust_protocol::AccountId,
    ) {
        let (p, mut chain, dir) = provider(3);
        let s = p.submit(TRACE, None, &chain.contract).await.unwrap();
        chain.block().await;
        let seated = chain.block().await;
        p.on_block(&seated, &chain.contract).await;
        let ev = chain.block().await;
        let seat = ev
            .iter()
            .find_map(|e| match e {
                Event::KeyDelivered {
                    segment: 0, seat, ..
                } => Some(*seat),
                _ => None,
            })
            .expect("segment 0's key delivered in round 0");
        (p, chain, dir, s, seat)
    }

    /// The seats a block draws are known only once that block exists (its seed is its
    /// proposer's VRF output): nothing is sealed before the draw, the provider reads the
    /// seats from the drawing block's events, and their keys land in the block right after
    /// it, in the commit window with blocks left, so every seat is keyed on record.
    #[tokio::test]
    async fn keys_to_the_drawn_seats_land_in_the_block_after_the_draw() {
        let (p, mut chain, _dir) = provider(4);
        let s = p.submit(TRACE, None, &chain.contract).await.unwrap();
        let opened = chain.block().await;
        assert!(
            opened.iter().any(
                |e| matches!(e, Event::SessionOpened { session, .. } if *session == s.session)
            )
        );
        p.on_block(&opened, &chain.contract).await;
        assert_eq!(chain.pooled().await, 0, "nothing to seal before the draw");
        let drawing = chain.block().await;
        let drawn: Vec<(u16, AccountId, u8)> = drawing
            .iter()
            .filter_map(Event::seat_assigned)
            .map(|(_, segment, seat, round)| (segment, seat, round))
            .collect();
        assert!(
            !drawn.is_empty(),
            "the block after the opening draws the seats"
        );
        assert_eq!(keys_delivered(&drawing), 0, "no key in the drawing block");
        p.on_block(&drawing, &chain.contract).await;
        assert!(
            chain.pooled().await >= 1,
            "the delivery is pooled after the draw"
        );
        let next = chain.block().await;
        assert!(keys_delivered(&next) >= drawn.len());
        // Every drawn seat holds its own segment's key.
        for (segment, seat, _) in &drawn {
            assert!(
                next.iter().any(|e| matches!(e,
                    Event::KeyDelivered { segment: g, seat: x, .. } if g == segment && x == seat)),
                "no key for seat {seat} of segment {segment}"
            );
        }
        // On record as keyed in time: no seat is starved by the block's delay.
        let sess = &chain.contract.state().sessions[&s.session];
        for g in &sess.segments {
            for seat in &g.seats {
                assert!(
                    seat.keyed(g.entry.depends_on.len()),
                    "seat {} not keyed",
                    seat.account
                );
            }
        }
        p.on_block(&next, &chain.contract).await;
        assert_eq!(chain.pooled().await, 0, "nothing is sealed twice");
    }

    /// A seat drawn in an escalation round gets its segment's key again, once, though its
    /// account was sent it in round 0: the contract counts a key only for the round whose
    /// commit window it lands in.
    #[tokio::test]
    async fn a_seat_of_an_escalation_round_gets_its_key_again_once() {
        let (p, mut chain, _dir, s, seat) = keyed_in_round0().await;
        assert_eq!(chain.pooled().await, 0);
        // Round 0's pair again: already served.
        p.deliver(&s.session, &[(0, seat, 0)], &chain.contract)
            .await;
        assert_eq!(chain.pooled().await, 0);
        // The same pair for a round-1 seat: sent again, once.
        p.deliver(&s.session, &[(0, seat, 1)], &chain.contract)
            .await;
        assert_eq!(chain.pooled().await, 1);
        let ev = chain.block().await;
        assert!(
            ev.iter().any(
                |e| matches!(e, Event::KeyDelivered { segment: 0, seat: x, .. } if *x == seat)
            )
        );
        p.deliver(&s.session, &[(0, seat, 1)], &chain.contract)
            .await;
        assert_eq!(chain.pooled().await, 0);
    }

    /// Each appeal round's seat gets its keys again, once per round, though the account
    /// was sent them in an earlier round.
    #[tokio::test]
    async fn a_seat_of_each_appeal_round_gets_its_key_again_once() {
        let (p, mut chain, _dir, s, seat) = keyed_in_round0().await;
        for round in [2u8, 3] {
            p.deliver(&s.session, &[(0, seat, round)], &chain.contract)
                .await;
            assert_eq!(chain.pooled().await, 1, "round {round}");
            chain.block().await;
            p.deliver(&s.session, &[(0, seat, round)], &chain.contract)
                .await;
            assert_eq!(chain.pooled().await, 0, "round {round} again");
        }
        let r = p.load(&s.session).unwrap();
        assert!(r.delivered_appeal.contains(&(2, 0, seat)));
        assert!(r.delivered_appeal.contains(&(3, 0, seat)));
    }

    /// A provider restarted after seats were drawn, before its `DeliverKeys` went out,
    /// delivers them from its record and the contract state.
    #[tokio::test]
    async fn a_restarted_provider_delivers_the_keys_it_still_owes() {
        let (p, mut chain, _dir) = provider(3);
        let s = p.submit(TRACE, None, &chain.contract).await.unwrap();
        chain.block().await;
        let seated = chain.block().await; // seats drawn; the provider "crashed" before on_block
        assert!(
            seated
                .iter()
                .any(|e| matches!(e, Event::SeatAssigned { .. }))
        );
        p.resume(&chain.contract).await;
        let ev = chain.block().await;
        let delivered = keys_delivered(&ev);
        let sess = &chain.contract.state().sessions[&s.session];
        assert!(delivered >= sess.segments.len() * 3, "{delivered}");
        // Once delivered, a second resume sends nothing more.
        p.resume(&chain.contract).await;
        assert_eq!(chain.pooled().await, 0);
    }

    /// A provider killed with its `DeliverKeys` signed and gossiped but not yet included
    /// starts again with an empty pool. Its journal puts them back under the nonces they
    /// were signed with (its peers hold those), the next transaction takes the nonce after
    /// them, and resuming its duties asks for the same deliveries again without signing a
    /// second transaction for any of them: every key lands once, and every pooled
    /// transaction applies.
    #[tokio::test]
    async fn a_provider_killed_with_transactions_in_flight_restores_them_and_signs_nothing_twice() {
        let mut chain = Chain::new(3);
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let open = |chain: &Chain| {
            let outbox = chain.outbox(provider_key()).with_journal(&db).unwrap();
            let p = Provider::open(outbox.clone(), BlobStore::open(&db).unwrap(), &db).unwrap();
            (p, outbox)
        };
        let (p, out) = open(&chain);
        let s = p.submit(TRACE, None, &chain.contract).await.unwrap();
        chain.block().await;
        let seated = chain.block().await;
        p.on_block(&seated, &chain.contract).await;
        let in_flight = chain.pooled().await;
        assert!(in_flight > 0, "deliveries pooled");
        let next = out.next_nonce().await.unwrap();
        assert_eq!(
            next,
            1 + u64::try_from(in_flight).unwrap(),
            "the OpenSession took nonce 0"
        );

        // Killed: the pool is gone, sled is not.
        drop((p, out));
        chain.restart_pool();
        let (p, out) = open(&chain);
        assert_eq!(out.restore().await, in_flight);
        assert_eq!(chain.pooled().await, in_flight);
        assert_eq!(out.next_nonce().await.unwrap(), next, "no nonce reused");
        p.resume(&chain.contract).await;
        assert_eq!(
            chain.pooled().await,
            in_flight,
            "the deliveries asked again are the ones restored"
        );
        assert_eq!(out.next_nonce().await.unwrap(), next);

        let ev = chain.block().await;
        let delivered = keys_delivered(&ev);
        let sess = &chain.contract.state().sessions[&s.session];
        let seats = seat_count(sess);
        assert_eq!(delivered, seats, "each seat's key once");
        out.flush().await;
        assert_eq!(
            db.open_tree(crate::audit::outbox::JOURNAL_TREE)
                .unwrap()
                .len(),
            0,
            "included transactions leave the journal"
        );
    }

    /// A trace at the size limit (5,000 steps in about 1 MiB) opens one session of
    /// grouped steps, all of them Computer segments, and every seat gets its keys. With
    /// ten seats per segment that is more keys than one transaction carries, so they go
    /// out in several `DeliverKeys` (the mempool refuses a transaction over the size
    /// limit).
    #[tokio::test]
    async fn a_one_mebibyte_trace_of_5000_steps_opens_one_session_and_every_seat_gets_its_keys() {
        let (p, mut chain, _dir) = provider(10);
        let p = p.with_seats_per_segment(10);
        let trace = trust_judging::decompose::sample::counter_trace(5000, 208, 0, None);
        assert!(trace.len() > 1_000_000);
        let s = p
            .submit(&trace, None, &chain.contract)
            .await
            .expect("accepted");
        assert!(
            s.segments.len()
                <= trust_judging::decompose::MAX_DECOMPOSED_SEGMENTS + honeypot::MAX_PER_SESSION
        );
        assert!(s.segments.len() > 100, "{} segments", s.segments.len());
        assert!(s.segments.iter().all(|(_, t)| *t == Tier::Computer));
        let opened = chain.block().await;
        assert!(
            opened.iter().any(
                |e| matches!(e, Event::SessionOpened { session, .. } if *session == s.session)
            ),
            "the OpenSession applied"
        );
        let seated = chain.block().await;
        assert!(
            seated
                .iter()
                .any(|e| matches!(e, Event::SeatAssigned { .. }))
        );
        p.on_block(&seated, &chain.contract).await;
        let ev = chain.block().await;
        let delivered = keys_delivered(&ev);
        let sess = &chain.contract.state().sessions[&s.session];
        let seats = seat_count(sess);
        assert!(seats >= s.segments.len() * 10);
        assert!(
            seats * 122 > MAX_TX_BYTES,
            "more keys than one transaction carries"
        );
        assert!(
            delivered >= seats && delivered > KEYS_PER_DELIVERY,
            "{delivered} keys delivered for {seats} seats"
        );
    }

    #[tokio::test]
    async fn only_seats_read_segments_and_each_only_its_own_and_their_premises() {
        let (p, mut chain, _dir) = provider(4);
        let s = p.submit(TRACE, None, &chain.contract).await.unwrap();
        let mut ev = chain.block().await;
        ev.extend(chain.block().await); // seats drawn
        p.on_block(&ev, &chain.contract).await;
        let ev = chain.block().await; // DeliverKeys included
        let sess = &chain.contract.state().sessions[&s.session];
        let ids: Vec<Hash> = sess.segments.iter().map(|x| x.entry.id).collect();
        let cids: Vec<_> = sess.segments.iter().map(|x| x.entry.cid).collect();
        let blob = |j: usize| p.blobs.get(&cids[j]).unwrap().unwrap();
        let honeypots: BTreeSet<usize> = p
            .load(&s.session)
            .unwrap()
            .honeypots
            .iter()
            .map(|h| usize::from(h.segment))
            .collect();
        assert_eq!(honeypots.len(), s.honeypots);
        let auditors: Vec<Keypair> = (0..4).map(auditor).collect();
        let outsider = sealing(200);
        let mut delivered = 0;
        for e in &ev {
            let Event::KeyDelivered {
                segment,
                seat,
                sealed,
                ..
            } = e
            else {
                continue;
            };
            delivered += 1;
            let j = usize::from(*segment);
            let i = auditors.iter().position(|k| k.public() == *seat).unwrap();
            let ctx = key_context(&s.session, &ids[j], seat);
            // The addressed seat opens it and reads the segment.
            let key = open_key(&sealing(i), sealed, &ctx).unwrap();
            let doc =
                SegmentDoc::from_bytes(&decrypt_segment(&key, &ids[j], &blob(j)).unwrap()).unwrap();
            assert!(TRACE.contains(&doc.claim) || honeypots.contains(&j));
            // Nobody else does: not the outsider, not another seat.
            assert!(open_key(&outsider, sealed, &ctx).is_err());
            let other = (i + 1) % 4;
            let other_ctx = key_context(&s.session, &ids[j], &auditors[other].public());
            assert!(open_key(&sealing(other), sealed, &other_ctx).is_err());
            // The key opens only its own segment's ciphertext.
            for k in (0..ids.len()).filter(|k| *k != j) {
                assert!(decrypt_segment(&key, &ids[k], &blob(k)).is_err());
            }
            // It was sent because the seat sits on this segment or on one that cites it.
            let seg_seats = |x: usize| sess.segments[x].seats.iter().any(|st| st.account == *seat);
            assert!(
                seg_seats(j)
                    || sess.segments.iter().enumerate().any(|(x, d)| d
                        .entry
                        .depends_on
                        .contains(segment)
                        && seg_seats(x))
            );
        }
        assert!(
            delivered >= ids.len() * 3,
            "every segment's three seats got its key"
        );
    }
}
