package io.virtio4j.jcstress;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.IIIII_Result;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Runs every litmus scenario's two actors one after the other, in both orders, and checks the outcome. This
 * proves the scenarios are not vacuous: in the race tests each side's decision really depends on the other
 * side's store (driver first: no kick but the device sees the buffer; device first: the device sees nothing
 * and the driver kicks), so the forbidden outcome is reachable only through a reordering.
 */
class ScenarioSequentialTest {

    @ParameterizedTest
    @CsvSource({"SPLIT,WEAK,EAGER", "SPLIT,STRONG,EAGER", "SPLIT,WEAK,LAZY", "SPLIT,STRONG,LAZY",
        "PACKED,WEAK,EAGER", "PACKED,STRONG,EAGER", "PACKED,WEAK,LAZY", "PACKED,STRONG,LAZY"})
    void availPublication(RingFormat f, Ordering o, AvailPublication p) {
        AvailPublish first = new AvailPublish(f, o, p);
        first.driver();
        IIIII_Result r = new IIIII_Result();
        first.device(r);
        assertEquals(AvailPublish.SEEN, r.toString());

        AvailPublish second = new AvailPublish(f, o, p);
        IIIII_Result r2 = new IIIII_Result();
        second.device(r2);
        second.driver();
        assertEquals(AvailPublish.EMPTY, r2.toString());
    }

    @ParameterizedTest
    @CsvSource({"SPLIT,WEAK", "SPLIT,STRONG", "PACKED,WEAK", "PACKED,STRONG"})
    void usedPublication(RingFormat f, Ordering o) {
        UsedPublish first = new UsedPublish(f, o);
        first.device();
        III_Result r = new III_Result();
        first.driver(r);
        assertEquals(UsedPublish.SEEN, r.toString());

        UsedPublish second = new UsedPublish(f, o);
        III_Result r2 = new III_Result();
        second.driver(r2);
        second.device();
        assertEquals(UsedPublish.EMPTY, r2.toString());
    }

    @ParameterizedTest
    @CsvSource({"SPLIT,WEAK,true", "SPLIT,WEAK,false", "SPLIT,STRONG,true", "SPLIT,STRONG,false",
        "PACKED,WEAK,true", "PACKED,WEAK,false", "PACKED,STRONG,true", "PACKED,STRONG,false"})
    void kickRace(RingFormat f, Ordering o, boolean eventIdx) {
        KickRace driverFirst = new KickRace(f, o, eventIdx);
        int kick = driverFirst.driver();
        int sees = driverFirst.device();
        assertEquals("0, 1", kick + ", " + sees, "driver first: kicks are off, so no kick; the device then sees the buffer");

        KickRace deviceFirst = new KickRace(f, o, eventIdx);
        sees = deviceFirst.device();
        kick = deviceFirst.driver();
        assertEquals("1, 0", kick + ", " + sees, "device first: it sees nothing and re-enables kicks, so the driver kicks");
    }

    @ParameterizedTest
    @CsvSource({"SPLIT,WEAK,true", "SPLIT,WEAK,false", "SPLIT,STRONG,true", "SPLIT,STRONG,false",
        "PACKED,WEAK,true", "PACKED,WEAK,false", "PACKED,STRONG,true", "PACKED,STRONG,false"})
    void callbackRace(RingFormat f, Ordering o, boolean eventIdx) {
        CallbackRace deviceFirst = new CallbackRace(f, o, eventIdx);
        int notify = deviceFirst.device();
        int sleeps = deviceFirst.driver();
        assertEquals("0, 0", notify + ", " + sleeps,
                "device first: callbacks are off, so no notification; the driver then sees the used buffer");

        CallbackRace driverFirst = new CallbackRace(f, o, eventIdx);
        sleeps = driverFirst.driver();
        notify = driverFirst.device();
        assertEquals("1, 1", notify + ", " + sleeps,
                "driver first: it sees nothing and re-enables callbacks, so the device notifies");
    }

    @Test
    void negativeControlRefusesToRunWithTheFenceInPlace() {
        assertThrows(IllegalStateException.class, NegativeControl::require);
    }
}
