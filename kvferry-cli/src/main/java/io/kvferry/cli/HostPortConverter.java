package io.kvferry.cli;

import java.util.Objects;

import io.kvferry.HostPort;
import picocli.CommandLine;

/**
 * Reads {@code host:port}, {@code [IPv6]:port} and {@code hostname:port} into a {@link HostPort}. Stateless and
 * thread-safe.
 */
public final class HostPortConverter implements CommandLine.ITypeConverter<HostPort> {

	/**
	 * @param text the option's value
	 * @return the address
	 * @throws CommandLine.TypeConversionException when the text is not an address with a port
	 */
	@Override
	public HostPort convert(String text) {
		Objects.requireNonNull(text, "text");
		try {
			return HostPort.parse(text.trim());
		}
		catch (IllegalArgumentException e) {
			throw new CommandLine.TypeConversionException(e.getMessage()
					+ " (expected: host:port, e.g. 127.0.0.1:8998 or [::1]:8998)");
		}
	}
}
