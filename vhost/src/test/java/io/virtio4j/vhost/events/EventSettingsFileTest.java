package io.virtio4j.vhost.events;

import jdk.jfr.Configuration;
import jdk.jfr.Event;
import jdk.jfr.Name;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * {@code share/virtio4j/jfr/virtio4j.jfc}, the settings file README's "Flight recording" recommends for a
 * busy-polling back-end, enables every event of this package and names nothing else (no JDK event, so no execution
 * sampler sharing a pinned queue thread's CPU): an event added here without an entry there would go unrecorded.
 */
class EventSettingsFileTest {

    private static final Path SETTINGS = Path.of("../share/virtio4j/jfr/virtio4j.jfc");

    @Test
    void theSettingsFileEnablesEveryEventOfThisPackageAndNothingElse() throws Exception {
        Map<String, String> settings = Configuration.create(SETTINGS).getSettings();
        Set<String> enabled = new TreeSet<>();
        Set<String> named = new TreeSet<>();
        settings.forEach((key, value) -> {
            String event = key.substring(0, key.indexOf('#'));
            named.add(event);
            if (key.endsWith("#enabled") && value.equals("true")) {
                enabled.add(event);
            }
        });
        Set<String> events = new TreeSet<>();
        Path dir = Path.of(RingStarted.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                .resolve(RingStarted.class.getPackageName().replace('.', '/'));
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class") && !p.toString().contains("$")).toList()) {
                String simple = f.getFileName().toString().replace(".class", "");
                Class<?> c = Class.forName(RingStarted.class.getPackageName() + "." + simple);
                if (Event.class.isAssignableFrom(c) && c.isAnnotationPresent(Name.class)) {
                    events.add(c.getAnnotation(Name.class).value());
                }
            }
        }
        assertFalse(events.isEmpty(), "event classes found in " + dir);
        assertEquals(events, enabled, "events the settings file enables");
        assertEquals(events, named, "events the settings file names (nothing else)");
    }
}
