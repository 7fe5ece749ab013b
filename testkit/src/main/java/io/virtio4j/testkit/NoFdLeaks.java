package io.virtio4j.testkit;

import java.util.Map;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test that ends with more or fewer of our descriptors open than it started with ({@link OpenFds}),
 * listing what each extra one points at. Runs around every test of a class annotated
 * {@code @ExtendWith(NoFdLeaks.class)}, so error paths are checked as well as the happy ones.
 */
public final class NoFdLeaks implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(NoFdLeaks.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NAMESPACE).put(context.getUniqueId(), OpenFds.snapshot());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        @SuppressWarnings("unchecked")
        Map<Integer, String> before = (Map<Integer, String>) context.getStore(NAMESPACE).remove(context.getUniqueId());
        OpenFds.assertBackTo(before);
    }
}
