package io.virtio4j.jcstress.harness;

import io.virtio4j.jcstress.CallbackRaceNegativeControl;
import io.virtio4j.jcstress.CallbackRaceTest;
import io.virtio4j.jcstress.KickRaceNegativeControl;
import io.virtio4j.jcstress.KickRaceTest;
import io.virtio4j.jcstress.PackedCallbackRaceNegativeControl;
import io.virtio4j.jcstress.PackedKickRaceNegativeControl;
import io.virtio4j.jcstress.PackedKickRaceTest;
import io.virtio4j.jcstress.PackedUsedPublishTest;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JcstressSuiteTest {
    /** Built by this module's compile phase (surefire runs in the module directory). */
    private static final Path FENCE_OMITTING = Path.of("target/negative-control-classes").toAbsolutePath();

    private static boolean selects(JcstressSuite.Suite s, Class<?> test) {
        Pattern p = Pattern.compile(s.filter);
        // jcstress names nested tests either way depending on where the name comes from
        return p.matcher(test.getName()).find() && p.matcher(test.getCanonicalName()).find();
    }

    @Test
    void suitesAreDisjoint() {
        for (Class<?> ring : List.of(KickRaceTest.WeakEventIdx.class, CallbackRaceTest.StrongFlags.class,
                PackedKickRaceTest.WeakEventIdx.class, PackedUsedPublishTest.Strong.class)) {
            assertTrue(selects(JcstressSuite.Suite.RING, ring), ring.getName());
            assertFalse(selects(JcstressSuite.Suite.NEGATIVE_CONTROL, ring), ring.getName());
        }
        for (Class<?> control : List.of(KickRaceNegativeControl.WeakEventIdx.class, CallbackRaceNegativeControl.WeakFlags.class,
                PackedKickRaceNegativeControl.StrongFlags.class, PackedCallbackRaceNegativeControl.WeakEventIdx.class)) {
            assertTrue(selects(JcstressSuite.Suite.NEGATIVE_CONTROL, control), control.getName());
            assertFalse(selects(JcstressSuite.Suite.RING, control), control.getName());
        }
    }

    @Test
    void onlyTheNegativeControlRemovesTheFence() {
        List<String> ring = JcstressSuite.jcstressArgs(JcstressSuite.Suite.RING, "ci", "", "", null);
        assertFalse(String.join(" ", ring).contains("-Xbootclasspath"), ring.toString());
        List<String> negative = JcstressSuite.jcstressArgs(JcstressSuite.Suite.NEGATIVE_CONTROL, "ci", "", "", FENCE_OMITTING);
        int i = negative.indexOf("-Xbootclasspath/a:" + FENCE_OMITTING);
        assertTrue(i > 0 && negative.get(i - 1).equals("-jvmArgsPrepend"), negative.toString());
        assertTrue(String.join(" ", JcstressSuite.jcstressArgs(JcstressSuite.Suite.RING, "default", "", "", null)).contains("--enable-native-access=ALL-UNNAMED"));
    }

    @Test
    void theFenceOmittingClassesBelongToTheNegativeControlOnly() {
        assertThrows(IllegalArgumentException.class,
                () -> JcstressSuite.fenceOmittingClasses(JcstressSuite.Suite.RING, FENCE_OMITTING.toString()));
        assertThrows(IllegalArgumentException.class,
                () -> JcstressSuite.fenceOmittingClasses(JcstressSuite.Suite.NEGATIVE_CONTROL, null));
        assertThrows(IllegalArgumentException.class, // a directory without the class: a build that forgot it
                () -> JcstressSuite.fenceOmittingClasses(JcstressSuite.Suite.NEGATIVE_CONTROL, "target"));
        assertEquals(FENCE_OMITTING, JcstressSuite.fenceOmittingClasses(JcstressSuite.Suite.NEGATIVE_CONTROL,
                FENCE_OMITTING.toString()));
        assertEquals(null, JcstressSuite.fenceOmittingClasses(JcstressSuite.Suite.RING, null));
    }

    @Test
    void onlyNarrowsTheSuite() {
        Pattern p = Pattern.compile(JcstressSuite.Suite.RING.filter("KickRace"));
        assertTrue(p.matcher(KickRaceTest.WeakEventIdx.class.getCanonicalName()).find());
        assertFalse(p.matcher(CallbackRaceTest.WeakEventIdx.class.getCanonicalName()).find());
        assertFalse(p.matcher(KickRaceNegativeControl.WeakEventIdx.class.getCanonicalName()).find());

        // one format only, as jcstress/README.md says
        Pattern packed = Pattern.compile(JcstressSuite.Suite.RING.filter("Packed"));
        Pattern split = Pattern.compile(JcstressSuite.Suite.RING.filter("^(?!.*Packed)"));
        for (Class<?> c : List.of(PackedKickRaceTest.WeakEventIdx.class, PackedUsedPublishTest.Strong.class)) {
            assertTrue(packed.matcher(c.getCanonicalName()).find(), c.getName());
            assertFalse(split.matcher(c.getCanonicalName()).find(), c.getName());
        }
        for (Class<?> c : List.of(KickRaceTest.WeakEventIdx.class, CallbackRaceTest.StrongFlags.class)) {
            assertFalse(packed.matcher(c.getCanonicalName()).find(), c.getName());
            assertTrue(split.matcher(c.getCanonicalName()).find(), c.getName());
        }
    }

    @Test
    void extraArgumentsOverrideThePresetAndAddJvmArguments() {
        List<String> a = JcstressSuite.jcstressArgs(JcstressSuite.Suite.RING, "ci", "", "-iters 7 -v -jvmArgsPrepend -Xss1m", null);
        assertEquals(List.of("-m", "quick", "-iters", "7", "-sc", "false"), a.subList(0, 6));
        assertTrue(a.contains("-v"));
        int first = a.indexOf("-jvmArgsPrepend");
        assertEquals(List.of("-jvmArgsPrepend", "--enable-native-access=ALL-UNNAMED", "-jvmArgsPrepend", "-Xss1m"),
                a.subList(first, first + 4));
        assertThrows(IllegalArgumentException.class,
                () -> JcstressSuite.jcstressArgs(JcstressSuite.Suite.RING, "ci", "", "-t Foo", null));
    }

    @Test
    void aSuiteWithNoTestMatchingOnlyIsSkippedNotFailed() throws Exception {
        // returns before jcstress runs anything: -Djcstress.only=KickRaceTest must not fail the negative control
        assertEquals(0, JcstressSuite.run(JcstressSuite.Suite.NEGATIVE_CONTROL, "ci", "NoSuchTestAnywhere", "", FENCE_OMITTING));
    }
}
