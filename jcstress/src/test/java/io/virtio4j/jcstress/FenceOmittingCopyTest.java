package io.virtio4j.jcstress;

import io.virtio4j.core.ordering.Fences;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The negative control's fence-omitting {@code Fences} (src/negative-control/java, built into
 * target/negative-control-classes): it must stand in for core's exactly, and reach the ring code only through
 * the boot class path of the JVMs the harness starts for the negative control.
 */
class FenceOmittingCopyTest {
    private static final Path FENCE_OMITTING = Path.of("target/negative-control-classes").toAbsolutePath();

    @Test
    void theCopyHasCoreFencesPublicMethodsAndTheMarkerCoreLacks() throws Exception {
        try (URLClassLoader loader = new URLClassLoader(new URL[] {FENCE_OMITTING.toUri().toURL()},
                ClassLoader.getPlatformClassLoader())) {
            Class<?> copy = loader.loadClass(Fences.class.getName());
            assertNotSame(Fences.class, copy);
            // a method core adds and the copy lacks would be a NoSuchMethodError in the negative control only
            assertEquals(publicMethods(Fences.class), publicMethods(copy));
            copy.getField(NegativeControl.MARKER);
            assertThrows(NoSuchFieldException.class, () -> Fences.class.getField(NegativeControl.MARKER));
        }
    }

    @Test
    void theCoreFencesIsWhatThisJvmLinksTo() {
        assertFalse(NegativeControl.fenceOmitted());
    }

    @Test
    void onTheBootClassPathTheCopyReplacesCoresFences() throws Exception {
        assertEquals("fenceOmitted=false", probe(List.of()));
        assertEquals("fenceOmitted=true", probe(List.of("-Xbootclasspath/a:" + FENCE_OMITTING)));
    }

    private static Set<String> publicMethods(Class<?> c) {
        Set<String> s = new TreeSet<>();
        for (Method m : c.getDeclaredMethods()) {
            if (Modifier.isPublic(m.getModifiers())) {
                s.add(Modifier.toString(m.getModifiers()) + " " + m.getReturnType().getName() + " " + m.getName()
                        + Arrays.toString(m.getParameterTypes()));
            }
        }
        return s;
    }

    /** Runs {@link FenceProbe} in a fresh JVM with this JVM's class path and {@code jvmArgs}; returns its output. */
    private static String probe(List<String> jvmArgs) throws IOException, InterruptedException {
        List<String> cmd = new java.util.ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), FenceProbe.class.getName()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "probe JVM did not finish");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertEquals(0, p.exitValue(), out);
        return out;
    }
}
