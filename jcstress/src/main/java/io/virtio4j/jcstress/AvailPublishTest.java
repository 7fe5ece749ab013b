package io.virtio4j.jcstress;

import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.ordering.Ordering;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIIII_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/** {@link AvailPublish} for both orderings, publishing from {@code add} (EAGER) or from {@code kickPrepare} (LAZY). */
public final class AvailPublishTest {
    private AvailPublishTest() {
    }

    @JCStressTest
    @Description("Driver adds [readable payload, writable] and publishes avail.idx from add (EAGER), WEAK ordering; device pops")
    @Outcome(id = AvailPublish.EMPTY, expect = ACCEPTABLE, desc = "device ran first: ring empty")
    @Outcome(id = AvailPublish.SEEN, expect = ACCEPTABLE, desc = "device sees the index, the entry, both descriptors and the payload")
    @Outcome(expect = FORBIDDEN, desc = "index seen with a stale entry, descriptor or payload")
    @State
    public static class WeakEager {
        private final AvailPublish t = new AvailPublish(RingFormat.SPLIT, Ordering.WEAK, AvailPublication.EAGER);

        @Actor
        public void driver() {
            t.driver();
        }

        @Actor
        public void device(IIIII_Result r) {
            t.device(r);
        }
    }

    @JCStressTest
    @Description("Driver adds [readable payload, writable] and publishes avail.idx from add (EAGER), STRONG ordering; device pops")
    @Outcome(id = AvailPublish.EMPTY, expect = ACCEPTABLE, desc = "device ran first: ring empty")
    @Outcome(id = AvailPublish.SEEN, expect = ACCEPTABLE, desc = "device sees the index, the entry, both descriptors and the payload")
    @Outcome(expect = FORBIDDEN, desc = "index seen with a stale entry, descriptor or payload")
    @State
    public static class StrongEager {
        private final AvailPublish t = new AvailPublish(RingFormat.SPLIT, Ordering.STRONG, AvailPublication.EAGER);

        @Actor
        public void driver() {
            t.driver();
        }

        @Actor
        public void device(IIIII_Result r) {
            t.device(r);
        }
    }

    @JCStressTest
    @Description("Driver adds [readable payload, writable], kickPrepare publishes avail.idx (LAZY), WEAK ordering; device pops")
    @Outcome(id = AvailPublish.EMPTY, expect = ACCEPTABLE, desc = "device ran first: ring empty")
    @Outcome(id = AvailPublish.SEEN, expect = ACCEPTABLE, desc = "device sees the index, the entry, both descriptors and the payload")
    @Outcome(expect = FORBIDDEN, desc = "index seen with a stale entry, descriptor or payload")
    @State
    public static class WeakKickPrepare {
        private final AvailPublish t = new AvailPublish(RingFormat.SPLIT, Ordering.WEAK, AvailPublication.LAZY);

        @Actor
        public void driver() {
            t.driver();
        }

        @Actor
        public void device(IIIII_Result r) {
            t.device(r);
        }
    }

    @JCStressTest
    @Description("Driver adds [readable payload, writable], kickPrepare publishes avail.idx (LAZY), STRONG ordering; device pops")
    @Outcome(id = AvailPublish.EMPTY, expect = ACCEPTABLE, desc = "device ran first: ring empty")
    @Outcome(id = AvailPublish.SEEN, expect = ACCEPTABLE, desc = "device sees the index, the entry, both descriptors and the payload")
    @Outcome(expect = FORBIDDEN, desc = "index seen with a stale entry, descriptor or payload")
    @State
    public static class StrongKickPrepare {
        private final AvailPublish t = new AvailPublish(RingFormat.SPLIT, Ordering.STRONG, AvailPublication.LAZY);

        @Actor
        public void driver() {
            t.driver();
        }

        @Actor
        public void device(IIIII_Result r) {
            t.device(r);
        }
    }
}
