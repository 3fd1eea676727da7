internal import CAvahi

/// Publishing the announcement in an entry group, and renaming it on collisions.
extension AvahiDiscovery {
    /// Registers the announcement if there is one and the client runs. With `replacing`, an
    /// already registered group is emptied first (a new announcement replaces the old one).
    func registerAnnouncement(replacing: Bool) {
        guard clientRunning, let client, let announcement else {
            return
        }
        if entryGroup == nil {
            // The callback may run inside avahi_entry_group_new(); it uses its own argument.
            entryGroup = avahi_entry_group_new(client, entryGroupCallback, userdata)
            if entryGroup == nil {
                emit(.publishFailed(reason: "avahi_entry_group_new: \(avahiErrorText(avahi_client_errno(client)))"))
                return
            }
        }
        guard let group = entryGroup else {
            return
        }
        if replacing {
            avahi_entry_group_reset(group)
        } else if avahi_entry_group_is_empty(group) == 0 {
            return
        }
        addService(announcement, to: group)
    }

    /// Adds the service to the (empty) group and commits it, renaming on a local collision.
    private func addService(_ announcement: ServiceAnnouncement, to group: OpaquePointer) {
        let entries: [[UInt8]]
        do {
            entries = try TXTRecord.encode(announcement.txt)
        } catch {
            emit(.publishFailed(reason: "\(error)"))
            return
        }
        var name = publishedName ?? announcement.name
        // Bounded: each attempt takes Avahi's next alternative ("Name #2", "Name #3", ...).
        for _ in 0..<32 {
            let txt = AvahiText.makeList(entries)
            defer { avahi_string_list_free(txt) }
            let result = name.withCString { cName in
                announcement.type.withCString { cType in
                    avahi_entry_group_add_service_strlst(
                        group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC),
                        AvahiPublishFlags(0), cName, cType, nil, nil, announcement.port, txt)
                }
            }
            if result == Int32(AVAHI_ERR_COLLISION) {
                // Another service of this host (another process on the same daemon) owns the
                // name already: take the alternative Avahi proposes.
                let alternative = alternativeName(for: name)
                emit(.nameCollision(old: name, new: alternative))
                name = alternative
                publishedName = alternative
                avahi_entry_group_reset(group)
                continue
            }
            if result < 0 {
                emit(.publishFailed(reason: "avahi_entry_group_add_service_strlst: \(avahiErrorText(result))"))
                return
            }
            let committed = avahi_entry_group_commit(group)
            if committed < 0 {
                emit(.publishFailed(reason: "avahi_entry_group_commit: \(avahiErrorText(committed))"))
            }
            publishedName = name
            return
        }
        emit(.publishFailed(reason: "no free instance name found near \"\(announcement.name)\""))
    }

    /// AvahiEntryGroupCallback.
    func entryGroupStateChanged(_ group: OpaquePointer, _ state: AvahiEntryGroupState) {
        if entryGroup == nil {
            entryGroup = group
        }
        guard group == entryGroup, let announcement else {
            return
        }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            emit(.published(name: publishedName ?? announcement.name))
        case AVAHI_ENTRY_GROUP_COLLISION:
            // RFC 6762 9: "If a host is probing for a set of records with the same name ... and
            // finds that another host is already using that name, it MUST choose a new name".
            // Avahi detected the conflict while probing; take its alternative name and register
            // again.
            let old = publishedName ?? announcement.name
            let alternative = alternativeName(for: old)
            publishedName = alternative
            emit(.nameCollision(old: old, new: alternative))
            avahi_entry_group_reset(group)
            addService(announcement, to: group)
        case AVAHI_ENTRY_GROUP_FAILURE:
            let error = avahi_client_errno(avahi_entry_group_get_client(group))
            emit(.publishFailed(reason: "entry group failed: \(avahiErrorText(error))"))
        default:
            break
        }
    }

    /// Avahi's next name for a service instance: "Name" -> "Name #2" -> "Name #3".
    private func alternativeName(for name: String) -> String {
        guard let alternative = avahi_alternative_service_name(name) else {
            return name + " #2"
        }
        defer { avahi_free(alternative) }
        return String(cString: alternative)
    }
}
