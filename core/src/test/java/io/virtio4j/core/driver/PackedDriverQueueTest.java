package io.virtio4j.core.driver;

import io.virtio4j.core.driver.PackedDeviceByHand.Element;
import io.virtio4j.core.driver.PackedDeviceByHand.Fetched;
import io.virtio4j.core.error.RingFullException;
import io.virtio4j.core.layout.EventSuppression;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.policy.AvailPublication;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static io.virtio4j.core.layout.PackedLayout.DESC_F_AVAIL;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_USED;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_WRITE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_DESC;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_DISABLE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_F_ENABLE;
import static io.virtio4j.core.layout.PackedLayout.EVENT_WRAP_BIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The packed driver (virtqueue.md 3.5, 3.7) against a device played by hand: what it writes into the ring, how
 * it publishes, kicks and reaps, and how it steers used-buffer notifications.
 */
class PackedDriverQueueTest {

    private static DriverOptions opts() {
        return DriverOptions.defaults();
    }

    private static int mode(int word) {
        return EventSuppression.mode(word);
    }

    private static int offWrap(int word) {
        return EventSuppression.offWrap(word);
    }

    @Test
    void theRingStartsZeroedAndASingleBufferMakesTheRoundTrip() {
        try (var d = new PackedDeviceByHand(8, opts())) {
            for (long off = 0; off < PackedLayout.descRingBytes(8); off++) {
                assertEquals(0, d.areas.descRing().get(ValueLayout.JAVA_BYTE, off), "ring byte " + off);
            }
            assertEquals(0, d.driverEventWord());
            assertEquals(0, d.deviceEventWord());

            d.add("a", 0, 1, 100);
            assertEquals(DESC_F_AVAIL | DESC_F_WRITE, d.flags(0));
            assertEquals(7, d.driver.freeDescriptors());
            assertEquals(1, d.driver.inFlight());
            Fetched f = d.fetch();
            assertEquals(new Fetched(0, 1, false, List.of(new Element(0x8000, 100, true))), f);
            assertNull(d.fetch());

            assertFalse(d.driver.hasUsed());
            assertNull(d.driver.pollUsed());
            d.complete(f, 60);
            assertTrue(d.driver.hasUsed());
            assertEquals("a", d.driver.pollUsed());
            assertEquals(60, d.driver.lastUsedLength());
            assertEquals(8, d.driver.freeDescriptors());
            assertEquals(0, d.driver.inFlight());
            assertNull(d.driver.pollUsed());
            assertEquals(1, d.driver.counters().completions);
        }
    }

    @Test
    void aChainTakesConsecutiveSlotsWithItsIdInTheLastAndComesBackOutOfOrder() {
        try (var d = new PackedDeviceByHand(8, opts())) {
            d.add("x", 0, 1, 10);
            d.add("chain", 2, 1, 50);
            assertEquals(4, d.driver.freeDescriptors());
            assertEquals(DESC_F_AVAIL | DESC_F_NEXT, d.flags(1));
            assertEquals(DESC_F_AVAIL | DESC_F_NEXT, d.flags(2));
            assertEquals(DESC_F_AVAIL | DESC_F_WRITE, d.flags(3));
            assertEquals(1, PackedDescriptors.id(d.areas.descRing(), 3), "the id goes in the last descriptor");
            Fetched x = d.fetch();
            Fetched chain = d.fetch();
            assertEquals(new Fetched(1, 3, false, List.of(new Element(0x1000, 50, false),
                    new Element(0x2000, 50, false), new Element(0x8000, 50, true))), chain);

            d.complete(chain, 50);
            d.complete(x, 0);
            assertEquals("chain", d.driver.pollUsed());
            assertEquals(50, d.driver.lastUsedLength());
            assertEquals(7, d.driver.freeDescriptors(), "the chain's three slots are free again");
            assertEquals("x", d.driver.pollUsed());
            assertEquals(0, d.driver.lastUsedLength(), "no WRITE flag: nothing written");
            assertEquals(8, d.driver.freeDescriptors());
        }
    }

    @Test
    void lenWithoutWriteFlagIsIgnored() {
        try (var d = new PackedDeviceByHand(8, opts())) {
            d.add("a", 0, 1, 100);
            d.fetch();
            d.writeUsed(0, 0, 0x7FFF_FFFF, DESC_F_AVAIL | DESC_F_USED);
            assertEquals("a", d.driver.pollUsed());
            assertEquals(0, d.driver.lastUsedLength());
        }
    }

    @Test
    void outOfOrderCompletionReturnsEachTokenWithItsLength() {
        try (var d = new PackedDeviceByHand(8, opts())) {
            d.add("a", 0, 1, 10);
            d.add("b", 0, 1, 20);
            d.add("c", 0, 1, 30);
            Fetched a = d.fetch();
            Fetched b = d.fetch();
            Fetched c = d.fetch();
            d.complete(c, 3);
            d.complete(a, 1);
            d.complete(b, 2);
            assertEquals("c", d.driver.pollUsed());
            assertEquals(3, d.driver.lastUsedLength());
            assertEquals("a", d.driver.pollUsed());
            assertEquals(1, d.driver.lastUsedLength());
            assertEquals("b", d.driver.pollUsed());
            assertEquals(2, d.driver.lastUsedLength());
            assertNull(d.driver.pollUsed());
        }
    }

    @Test
    void indirectBuffersTakeOneSlotAndOneTablePerId() {
        try (var d = new PackedDeviceByHand(8, opts(), 4, 3)) {
            d.add("i0", 2, 2, 64);
            d.add("direct", 1, 1, 8);
            d.add("i1", 1, 2, 32);
            assertEquals(8 - 1 - 2 - 1, d.driver.freeDescriptors());
            assertEquals(DESC_F_AVAIL | DESC_F_INDIRECT, d.flags(0));
            assertEquals(DESC_F_AVAIL | DESC_F_INDIRECT, d.flags(3));
            assertEquals(PackedDeviceByHand.TABLES_GUEST, PackedDescriptors.addr(d.areas.descRing(), 0));
            assertEquals(PackedDeviceByHand.TABLES_GUEST + 2 * 4 * 16, PackedDescriptors.addr(d.areas.descRing(), 3),
                    "id 2's table");
            assertEquals(3 * 16, PackedDescriptors.len(d.areas.descRing(), 3));

            Fetched i0 = d.fetch();
            assertEquals(new Fetched(0, 1, true, List.of(new Element(0x1000, 64, false), new Element(0x2000, 64, false),
                    new Element(0x8000, 64, true), new Element(0x9000, 64, true))), i0);
            Fetched direct = d.fetch();
            assertEquals(new Fetched(1, 2, false, List.of(new Element(0x1000, 8, false), new Element(0x8000, 8, true))),
                    direct);
            Fetched i1 = d.fetch();
            assertEquals(new Fetched(2, 1, true, List.of(new Element(0x1000, 32, false), new Element(0x8000, 32, true),
                    new Element(0x9000, 32, true))), i1);

            d.complete(i1, 64);
            d.complete(i0, 128);
            d.complete(direct, 8);
            assertEquals("i1", d.driver.pollUsed());
            assertEquals(64, d.driver.lastUsedLength());
            assertEquals("i0", d.driver.pollUsed());
            assertEquals(128, d.driver.lastUsedLength());
            assertEquals("direct", d.driver.pollUsed());
            assertEquals(8, d.driver.freeDescriptors());
        }
    }

    /**
     * Random chains, completed in random order by random subsets, on rings whose size is not a power of two, for
     * many laps: every token comes back exactly once with the length the device wrote, and the slot accounting
     * returns to a full ring.
     */
    @ParameterizedTest(name = "size {0}, {1} ordering")
    @CsvSource({"5, WEAK", "7, STRONG"})
    void nonPowerOfTwoRingsAcrossManyWraps(int size, Ordering ordering) {
        Random rnd = new Random(size * 31L);
        try (var d = new PackedDeviceByHand(size, opts().withOrdering(ordering))) {
            Map<Integer, Integer> tokenOfId = new HashMap<>();
            Map<Integer, Long> expectedLen = new HashMap<>();
            List<Fetched> fetched = new ArrayList<>();
            Set<Integer> returned = new HashSet<>();
            int next = 0;
            int slotsAdded = 0;
            int deviceLaps = 0;
            for (int round = 0; round < 200; round++) {
                while (rnd.nextInt(4) != 0) {
                    int readable = rnd.nextInt(2);
                    int writable = 1 + rnd.nextInt(2);
                    if (d.driver.freeDescriptors() < readable + writable) {
                        break;
                    }
                    d.add(next, readable, writable, 16);
                    slotsAdded += readable + writable;
                    Fetched f = d.fetch();
                    assertNotNull(f);
                    assertEquals(readable + writable, f.slots());
                    tokenOfId.put(f.id(), next++);
                    fetched.add(f);
                }
                Collections.shuffle(fetched, rnd);
                int n = fetched.isEmpty() ? 0 : 1 + rnd.nextInt(fetched.size());
                for (int i = 0; i < n; i++) {
                    Fetched f = fetched.removeLast();
                    long writableBytes = f.elements().stream().filter(Element::writable).mapToLong(Element::len).sum();
                    int written = rnd.nextInt((int) writableBytes + 1);
                    expectedLen.put(tokenOfId.get(f.id()), (long) written);
                    boolean wrapBefore = d.usedWrap;
                    d.complete(f, written);
                    if (d.usedWrap != wrapBefore) {
                        deviceLaps++;
                    }
                }
                Object t;
                while ((t = d.driver.pollUsed()) != null) {
                    int token = (Integer) t;
                    assertTrue(returned.add(token), "token " + token + " came back twice");
                    assertEquals(expectedLen.get(token), d.driver.lastUsedLength(), "length of token " + token);
                }
                assertEquals(size - fetched.stream().mapToInt(Fetched::slots).sum(), d.driver.freeDescriptors());
                assertEquals(fetched.size(), d.driver.inFlight());
            }
            assertTrue(deviceLaps >= 20, "only " + deviceLaps + " laps");
            assertEquals(next - fetched.size(), returned.size());
            assertTrue(slotsAdded > 20 * size);
        }
    }

    @Test
    void freeDescriptorsBoundWhatFits() {
        try (var d = new PackedDeviceByHand(4, opts())) {
            d.add("three", 2, 1, 8);
            assertEquals(1, d.driver.freeDescriptors());
            ScatterGather two = new ScatterGather(2).readable(0x1000, 8).writable(0x2000, 8);
            assertFalse(d.driver.hasRoomFor(two));
            RingFullException e = assertThrows(RingFullException.class, () -> d.driver.add(two, "two"));
            assertEquals(2, e.needed());
            assertEquals(1, e.free());
            assertEquals(1, d.driver.inFlight(), "a refused add changes nothing");
            d.add("one", 0, 1, 8);
            assertEquals(0, d.driver.freeDescriptors());
            Fetched three = d.fetch();
            d.complete(three, 0);
            assertEquals("three", d.driver.pollUsed());
            assertTrue(d.driver.hasRoomFor(two));
            d.driver.add(two, "two");
            assertEquals(1, d.driver.freeDescriptors());
            Fetched one = d.fetch();
            assertEquals(1, one.slots());
            Fetched again = d.fetch();
            assertEquals(2, again.slots());
            assertEquals(0, again.id(), "the freed id is reused");
        }
    }

    @Test
    void eagerPublishesEveryBufferAtAdd() {
        try (var d = new PackedDeviceByHand(8, opts())) {
            for (int i = 0; i < 3; i++) {
                d.add(i, 0, 1, 8);
                assertTrue(d.availableNow(), "buffer " + i + " visible at add");
                assertNotNull(d.fetch());
                assertEquals(i + 1, d.driver.counters().availIdxWrites);
            }
        }
    }

    @Test
    void lazyHoldsBackTheFirstHeadUntilPublish() {
        try (var d = new PackedDeviceByHand(8, opts().withPublication(AvailPublication.LAZY))) {
            d.add("a", 0, 1, 8);
            d.add("b", 1, 1, 8);
            assertFalse(d.availableNow(), "the first head is held back");
            assertEquals(0, d.flags(0));
            assertTrue(PackedLayout.isAvailable(d.flags(1), true), "later heads are stored plainly, unreachable");
            assertEquals(0, d.driver.counters().availIdxWrites);

            d.driver.publish();
            assertEquals(1, d.driver.counters().availIdxWrites, "one store publishes both");
            assertEquals(0, d.fetch().id());
            assertEquals(1, d.fetch().id());
            d.driver.publish();
            assertEquals(1, d.driver.counters().availIdxWrites, "nothing left to publish");

            d.add("c", 0, 1, 8);
            assertFalse(d.availableNow());
            d.driver.kickPrepare();
            assertTrue(d.availableNow(), "kickPrepare publishes");
            assertEquals(2, d.driver.counters().availIdxWrites);
        }
    }

    @Test
    void adaptiveIntervalDoublesWhileKicksAreSuppressedAndDropsWhenOneIsNeeded() {
        try (var d = new PackedDeviceByHand(16, opts().withEventIdx(false)
                .withPublication(AvailPublication.ADAPTIVE).withAdaptiveInterval(1, 4))) {
            d.deviceEvent(0, EVENT_F_DISABLE);
            int token = 0;
            d.add(token++, 0, 1, 8);
            assertNotNull(d.fetch(), "interval 1: published at once");
            assertFalse(d.driver.kickPrepare());

            d.add(token++, 0, 1, 8);
            assertFalse(d.availableNow(), "interval 2: held back");
            d.add(token++, 0, 1, 8);
            assertNotNull(d.fetch());
            assertNotNull(d.fetch());
            assertFalse(d.driver.kickPrepare());

            for (int i = 0; i < 3; i++) {
                d.add(token++, 0, 1, 8);
                assertFalse(d.availableNow(), "interval 4: add " + (i + 1) + " held back");
            }
            d.add(token++, 0, 1, 8);
            for (int i = 0; i < 4; i++) {
                assertNotNull(d.fetch(), "the fourth add published all four");
            }
            assertFalse(d.driver.kickPrepare());
            assertEquals(3, d.driver.counters().kicksSuppressed);

            d.deviceEvent(0, EVENT_F_ENABLE);
            d.add(token++, 0, 1, 8);
            assertFalse(d.availableNow(), "still interval 4");
            assertTrue(d.driver.kickPrepare(), "ENABLE asks for a kick");
            assertNotNull(d.fetch());
            d.add(token, 0, 1, 8);
            assertNotNull(d.fetch(), "a needed kick drops the interval back to 1");
            assertEquals(5, d.driver.counters().availIdxWrites);
        }
    }

    @Test
    void kickFollowsEnableAndDisable() {
        try (var d = new PackedDeviceByHand(8, opts().withEventIdx(false))) {
            d.add("a", 0, 1, 8);
            assertTrue(d.driver.kick());
            assertEquals(1, d.kicks.signals());
            assertFalse(d.driver.kickPrepare(), "nothing added since");

            d.deviceEvent(0, EVENT_F_DISABLE);
            d.add("b", 0, 1, 8);
            assertFalse(d.driver.kick());
            assertEquals(1, d.kicks.signals());
            assertEquals(1, d.driver.counters().kicksSuppressed);
            assertEquals(1, d.driver.counters().kicksSent);
        }
    }

    @Test
    void descEventWithoutEventIdxIsReadAsEnable() {
        try (var d = new PackedDeviceByHand(8, opts().withEventIdx(false))) {
            d.deviceEvent(7 | EVENT_WRAP_BIT, EVENT_F_DESC);
            d.add("a", 0, 1, 8);
            assertTrue(d.driver.kickPrepare(), "out of spec: a kick too many rather than one too few");
            assertFalse(d.driver.isBroken());
        }
    }

    @Test
    void kickWithDescEventOnlyWhenTheAddedSlotsCrossIt() {
        try (var d = new PackedDeviceByHand(8, opts())) {
            d.deviceEvent(2 | EVENT_WRAP_BIT, EVENT_F_DESC);
            d.add("a", 0, 1, 8);
            d.add("b", 0, 1, 8);
            assertFalse(d.driver.kickPrepare(), "slots 0-1 do not reach slot 2");
            d.add("c", 1, 1, 8);
            assertTrue(d.driver.kickPrepare(), "slots 2-3 include slot 2");
            d.add("d", 0, 1, 8);
            assertFalse(d.driver.kickPrepare(), "slot 4 is past the event");
        }
    }

    @Test
    void kickWithDescEventAcrossTheWrap() {
        try (var d = new PackedDeviceByHand(5, opts())) {
            for (int i = 0; i < 4; i++) {
                d.add(i, 0, 1, 8);
                assertTrue(d.driver.kickPrepare(), "ENABLE");
                d.complete(d.fetch(), 0);
                assertEquals(i, d.driver.pollUsed());
            }
            // The driver is at slot 4, lap 1. The device waits for slot 0 of lap 2 (wrap counter 0).
            d.deviceEvent(0, EVENT_F_DESC);
            d.add("s4", 0, 1, 8);
            assertFalse(d.driver.kickPrepare(), "slot 4 of lap 1 is not slot 0 of lap 2");
            d.add("s0", 0, 1, 8);
            assertTrue(d.driver.kickPrepare(), "slot 0 of lap 2");

            // An event left in the previous lap is behind: no kick.
            d.deviceEvent(4 | EVENT_WRAP_BIT, EVENT_F_DESC);
            d.add("s1", 0, 1, 8);
            assertFalse(d.driver.kickPrepare());

            // A list that wraps: slots 2, 3, 4 of lap 2 and 0 of lap 3 cross slot 0 with wrap counter 1.
            for (String t : new String[]{"s4", "s0", "s1"}) {
                d.complete(d.fetch(), 0);
                assertEquals(t, d.driver.pollUsed());
            }
            d.deviceEvent(EVENT_WRAP_BIT, EVENT_F_DESC);
            d.add("wrapping", 3, 1, 8);
            assertEquals(DESC_F_USED | DESC_F_NEXT, d.flags(2), "lap 2: wrap counter 0");
            assertEquals(DESC_F_AVAIL | DESC_F_WRITE, d.flags(0), "the slot past the end carries the lap-3 bits");
            assertTrue(d.driver.kickPrepare());
        }
    }

    @ParameterizedTest(name = "event at slot {0}")
    @ValueSource(ints = {0, 1, 2, 3})
    void kickWithDescEventAfterMoreThanALapWithoutKickPrepare(int eventSlot) {
        try (var d = new PackedDeviceByHand(4, opts())) {
            // A polling device takes 7 buffers without a kickPrepare: positions 0..6, the driver ends at slot 3
            // of lap 2 (wrap counter 0). Then the device waits at eventSlot of lap 2.
            for (int i = 0; i < 7; i++) {
                d.add(i, 0, 1, 8);
                d.complete(d.fetch(), 0);
                assertEquals(i, d.driver.pollUsed());
            }
            d.deviceEvent(eventSlot, EVENT_F_DESC);
            assertEquals(eventSlot < 3, d.driver.kickPrepare(),
                    "slots 0-2 of lap 2 were made available since, slot 3 not yet");
        }
    }

    @Test
    void callbacksWithoutEventIdxUseEnableAndDisable() {
        try (var d = new PackedDeviceByHand(8, opts().withEventIdx(false))) {
            d.driver.disableCallbacks();
            assertEquals(EVENT_F_DISABLE, mode(d.driverEventWord()));
            assertFalse(d.driver.enableCallbacksOrFindPending(), "nothing used: safe to sleep");
            assertEquals(EVENT_F_ENABLE, mode(d.driverEventWord()));

            d.add("a", 0, 1, 8);
            d.driver.disableCallbacks();
            d.complete(d.fetch(), 0);
            assertTrue(d.driver.enableCallbacksOrFindPending(), "a used buffer arrived meanwhile");
            d.driver.disableCallbacks();
            assertTrue(d.driver.enableCallbacksDelayedOrFindPending(), "without EVENT_IDX delayed is plain enable");
            assertEquals(EVENT_F_ENABLE, mode(d.driverEventWord()));
            assertEquals("a", d.driver.pollUsed());
            assertEquals(EVENT_F_ENABLE, mode(d.driverEventWord()));
        }
    }

    @Test
    void callbacksWithEventIdxPointAtTheNextUsedSlot() {
        try (var d = new PackedDeviceByHand(8, opts())) {
            for (int i = 0; i < 3; i++) {
                d.add(i, 0, 1, 8);
            }
            List<Fetched> f = List.of(d.fetch(), d.fetch(), d.fetch());
            assertFalse(d.driver.enableCallbacksOrFindPending());
            assertEquals(EVENT_F_DESC, mode(d.driverEventWord()));
            assertEquals(EVENT_WRAP_BIT, offWrap(d.driverEventWord()));

            d.complete(f.get(0), 0);
            d.complete(f.get(1), 0);
            assertEquals(0, d.driver.pollUsed());
            assertEquals(1 | EVENT_WRAP_BIT, offWrap(d.driverEventWord()), "DESC follows the next used slot");
            d.driver.disableCallbacks();
            assertEquals(EVENT_F_DISABLE, mode(d.driverEventWord()));
            assertEquals(1, d.driver.pollUsed());
            assertEquals(EVENT_F_DISABLE, mode(d.driverEventWord()), "disabled stays disabled while reaping");
            assertEquals(1 | EVENT_WRAP_BIT, offWrap(d.driverEventWord()));
            assertFalse(d.driver.enableCallbacksOrFindPending());
            assertEquals(2 | EVENT_WRAP_BIT, offWrap(d.driverEventWord()));
            d.complete(f.get(2), 0);
            assertTrue(d.driver.hasUsed());
            assertEquals(2, d.driver.pollUsed());
        }
    }

    @Test
    void delayedCallbacksPointThreeQuartersAheadAndFindTheDevicePastIt() {
        try (var d = new PackedDeviceByHand(8, opts())) {
            List<Fetched> f = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                d.add(i, 0, 1, 8);
                f.add(d.fetch());
            }
            assertFalse(d.driver.enableCallbacksDelayedOrFindPending());
            assertEquals(6 | EVENT_WRAP_BIT, offWrap(d.driverEventWord()), "3/4 of 8 outstanding slots ahead");
            for (int i = 0; i < 6; i++) {
                d.complete(f.get(i), 0);
            }
            assertFalse(d.driver.enableCallbacksDelayedOrFindPending(), "slot 6 not used yet: the device will notify");
            d.complete(f.get(6), 0);
            assertTrue(d.driver.enableCallbacksDelayedOrFindPending(), "the device went past slot 6");
        }
    }

    @Test
    void delayedCallbacksCountSlotsOfChainsAndWrap() {
        try (var d = new PackedDeviceByHand(5, opts())) {
            for (int i = 0; i < 4; i++) {
                d.add(i, 0, 1, 8);
                d.complete(d.fetch(), 0);
                assertEquals(i, d.driver.pollUsed());
            }
            d.add("one", 0, 1, 8);
            d.add("chain", 2, 1, 8);
            Fetched one = d.fetch();
            Fetched chain = d.fetch();
            assertFalse(d.driver.enableCallbacksDelayedOrFindPending());
            assertEquals(2, offWrap(d.driverEventWord()), "slot 4 + 3 slots = slot 2 of the next lap, wrap 0");
            d.complete(one, 0);
            assertFalse(d.driver.enableCallbacksDelayedOrFindPending(), "the device is at slot 0, before slot 2");
            d.complete(chain, 0);
            assertTrue(d.driver.enableCallbacksDelayedOrFindPending(),
                    "the chain's used descriptor at slot 0 covers slot 2, which itself never looks used");
            assertFalse(PackedLayout.isUsed(d.flags(2), false));
        }
    }

    @Test
    void detachUnusedTakesEverythingBackAndResetStartsAfresh() {
        try (var d = new PackedDeviceByHand(4, opts())) {
            for (int i = 0; i < 5; i++) {
                d.add(i, 0, 1, 8);
                d.complete(d.fetch(), 0);
                assertEquals(i, d.driver.pollUsed());
            }
            d.add("a", 0, 1, 8);
            d.add("b", 1, 1, 8);
            d.complete(d.fetch(), 4);
            d.deviceEvent(EVENT_WRAP_BIT | 3, EVENT_F_DESC);
            d.driver.disableCallbacks();

            IllegalStateException e = assertThrows(IllegalStateException.class, d.driver::reset);
            assertTrue(e.getMessage().contains("2 buffers"), e.getMessage());
            Set<Object> back = new HashSet<>();
            Object t;
            while ((t = d.driver.detachUnused()) != null) {
                assertTrue(back.add(t));
            }
            assertEquals(Set.of("a", "b"), back, "a used but unreaped buffer is still the driver's");
            assertEquals(4, d.driver.freeDescriptors());
            assertEquals(0, d.driver.inFlight());

            d.driver.reset();
            for (long off = 0; off < PackedLayout.descRingBytes(4); off++) {
                assertEquals(0, d.areas.descRing().get(ValueLayout.JAVA_BYTE, off), "ring byte " + off);
            }
            assertEquals(0, d.driverEventWord());
            assertEquals(0, d.deviceEventWord());
            d.availPos = d.usedPos = 0;
            d.availWrap = d.usedWrap = true;
            d.add("fresh", 0, 1, 8);
            assertEquals(DESC_F_AVAIL | DESC_F_WRITE, d.flags(0), "wrap counter back to 1");
            Fetched f = d.fetch();
            assertEquals(0, f.id());
            d.complete(f, 8);
            assertEquals("fresh", d.driver.pollUsed());
        }
    }

    @Test
    void inOrderBatchIsReapedOneByOneWithSkippedBuffersFullyUsed() {
        try (var d = new PackedDeviceByHand(8, opts().withInOrder(true))) {
            d.add("a", 0, 1, 10);
            d.add("b", 1, 1, 20);
            d.add("c", 0, 1, 30);
            Fetched a = d.fetch();
            Fetched b = d.fetch();
            Fetched c = d.fetch();
            assertEquals(List.of(0, 1, 3), List.of(a.id(), b.id(), c.id()), "an id is the buffer's first slot");
            d.completeAs(c.id(), 4, 5);
            assertTrue(d.driver.hasUsed());
            assertEquals("a", d.driver.pollUsed());
            assertEquals(10, d.driver.lastUsedLength());
            assertEquals(5, d.driver.freeDescriptors(), "only a's slot is free until b and c are reaped");
            assertEquals("b", d.driver.pollUsed());
            assertEquals(20, d.driver.lastUsedLength());
            assertTrue(d.driver.hasUsed());
            assertEquals("c", d.driver.pollUsed());
            assertEquals(5, d.driver.lastUsedLength(), "the last one has the reported length");
            assertFalse(d.driver.hasUsed());
            assertNull(d.driver.pollUsed());
            assertEquals(8, d.driver.freeDescriptors());

            d.add("d", 0, 1, 40);
            Fetched dd = d.fetch();
            assertEquals(4, dd.id());
            d.complete(dd, 40);
            assertEquals("d", d.driver.pollUsed());
            assertEquals(40, d.driver.lastUsedLength());
        }
    }

    /** IN_ORDER batches of random sizes across many laps of rings whose size is not a power of two. */
    @ParameterizedTest(name = "size {0}")
    @ValueSource(ints = {5, 7})
    void inOrderBatchesAcrossWraps(int size) {
        Random rnd = new Random(size * 17L);
        try (var d = new PackedDeviceByHand(size, opts().withInOrder(true))) {
            ArrayDeque<Fetched> fetched = new ArrayDeque<>();
            ArrayDeque<Integer> tokens = new ArrayDeque<>();
            Map<Integer, Integer> writable = new HashMap<>();
            int next = 0;
            int expectNext = 0;
            for (int round = 0; round < 300; round++) {
                while (rnd.nextBoolean()) {
                    int elements = 1 + rnd.nextInt(2);
                    if (d.driver.freeDescriptors() < elements) {
                        break;
                    }
                    int len = 1 + rnd.nextInt(100);
                    d.add(next, elements - 1, 1, len);
                    writable.put(next, len);
                    Fetched f = d.fetch();
                    assertEquals((d.availPos - elements + size) % size, f.id(), "id = first slot");
                    fetched.add(f);
                    tokens.add(next++);
                }
                if (fetched.isEmpty()) {
                    continue;
                }
                int batch = 1 + rnd.nextInt(fetched.size());
                int slots = 0;
                Fetched last = null;
                int lastToken = -1;
                for (int i = 0; i < batch; i++) {
                    last = fetched.removeFirst();
                    lastToken = tokens.removeFirst();
                    slots += last.slots();
                }
                int written = rnd.nextInt(writable.get(lastToken) + 1);
                d.completeAs(last.id(), slots, written);
                for (int i = 0; i < batch; i++) {
                    Object t = d.driver.pollUsed();
                    assertEquals(expectNext, t);
                    assertEquals(i == batch - 1 ? written : writable.get(expectNext), d.driver.lastUsedLength());
                    expectNext++;
                }
                assertNull(d.driver.pollUsed());
            }
            assertTrue(next > 10 * size, "only " + next + " buffers");
            assertEquals(next - fetched.size(), expectNext);
        }
    }
}
